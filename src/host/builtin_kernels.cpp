// host/builtin_kernels.cpp: the shipped kernel variants, instantiated for the host from the
// same templates NVRTC compiles. The prelude comes first so the templates see CUDA's names;
// every op's templates come through the generated builtin_kernel_templates.inc, and each
// template's METRALE_HOST_KERNEL lines declare its shipped variants as slots this unit adds
// (host/builtin_kernel_registration.hpp). Names no op.
// This file is compiled with -fno-strict-aliasing (CMakeLists.txt): the kernels move bf16
// and fp8 elements through uint4/uint2 words, as CUDA code does.
#include "host/builtin_kernels.hpp"

#include "host/builtin_kernel_registration.hpp"

// A number the templates' lines do not use adds nothing.
template <int>
struct BuiltinKernelSlot {
  static void add(metrale::HostKernelTable& /*table*/) {}
};

constexpr int kFirstBuiltinSlot = __COUNTER__;
// clang-format off
#include "metrale/host/cuda_host_prelude.hpp"
#include "builtin_kernel_templates.inc"
// clang-format on
constexpr int kLastBuiltinSlot = __COUNTER__;

namespace metrale {

void register_builtin_host_kernels(HostKernelTable& table) {
  host_builtin::add_slots<BuiltinKernelSlot, kFirstBuiltinSlot, kLastBuiltinSlot>(table);
}

}  // namespace metrale
