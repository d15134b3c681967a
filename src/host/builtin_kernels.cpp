// host/builtin_kernels.cpp: the shipped kernel variants, instantiated for the host from the
// same templates/ NVRTC compiles. The prelude comes first so the templates see CUDA's names.
// The list itself is host/builtin_kernel_list.hpp (shared with the profiled unit).
// This file is compiled with -fno-strict-aliasing (CMakeLists.txt): the kernels move bf16
// and fp8 elements through uint4/uint2 words, as CUDA code does.
#include "host/builtin_kernels.hpp"

// clang-format off
#include "metrale/host/cuda_host_prelude.hpp"
#include "fp8_act_quant.cuh"
#include "fused_add_rmsnorm.cuh"
#include "silu_mul_fp8_quant.cuh"
#include "ssm_ba_gates.cuh"
#include "ssm_ba_gates_mma.cuh"
// clang-format on

#include "host/builtin_kernel_list.hpp"

namespace metrale {

void register_builtin_host_kernels(HostKernelTable& table) {
  using namespace metrale::kernels;
  METRALE_ADD_BUILTIN_HOST_KERNELS(table);
}

}  // namespace metrale
