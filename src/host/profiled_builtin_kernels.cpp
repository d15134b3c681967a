// host/profiled_builtin_kernels.cpp: the shipped kernel variants again, compiled as a profiled
// unit (cmake/profiled_host.cmake): every global access they make is recorded and their
// arithmetic counted. The templates are the same files builtin_kernels.cpp instantiates; they
// are included inside namespace metrale_profiled so these instantiations never merge with the
// plain ones at link time.
// Invariant: the same (kernel, params) list as builtin_kernels.cpp, from one macro
// (host/builtin_kernel_list.hpp).
#include <cstdint>
#include <string>

#include "host/builtin_kernel_list.hpp"
#include "host/builtin_kernels.hpp"

// clang-format off
#include "metrale/host/cuda_host_prelude.hpp"
namespace metrale_profiled {
#include "fp8_act_quant.cuh"
#include "fused_add_rmsnorm.cuh"
#include "silu_mul_fp8_quant.cuh"
#include "ssm_ba_gates.cuh"
#include "ssm_ba_gates_mma.cuh"
}  // namespace metrale_profiled
// clang-format on

namespace metrale {

void register_profiled_builtin_host_kernels(HostKernelTable& table) {
  using namespace metrale_profiled::metrale::kernels;
  METRALE_ADD_BUILTIN_HOST_KERNELS(table);
}

}  // namespace metrale
