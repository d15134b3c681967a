// host/profiled_builtin_kernels.cpp: the shipped kernel variants again, compiled as a profiled
// unit (cmake/profiled_host.cmake): every global access they make is recorded and their
// arithmetic counted. The templates are the same files builtin_kernels.cpp instantiates; they
// are included inside namespace metrale_profiled so these instantiations never merge with the
// plain ones at link time, and their METRALE_HOST_KERNEL lines specialise this namespace's
// slots, naming this namespace's functions. Names no op.
// Invariant: the same (kernel, params) as builtin_kernels.cpp, from the same template lines.
#include "host/builtin_kernel_registration.hpp"
#include "host/builtin_kernels.hpp"

namespace metrale_profiled {
// A number the templates' lines do not use adds nothing.
template <int>
struct BuiltinKernelSlot {
  static void add(metrale::HostKernelTable& /*table*/) {}
};
}  // namespace metrale_profiled

constexpr int kFirstBuiltinSlot = __COUNTER__;
// clang-format off
#include "metrale/host/cuda_host_prelude.hpp"
namespace metrale_profiled {
#include "builtin_kernel_templates.inc"
}  // namespace metrale_profiled
// clang-format on
constexpr int kLastBuiltinSlot = __COUNTER__;

namespace metrale {

void register_profiled_builtin_host_kernels(HostKernelTable& table) {
  host_builtin::add_slots<metrale_profiled::BuiltinKernelSlot, kFirstBuiltinSlot, kLastBuiltinSlot>(table);
}

}  // namespace metrale
