// host/profiled_builtin_kernels.cpp: the shipped kernel variants again, compiled as a profiled
// unit (cmake/profiled_host.cmake): every global access they make is recorded and their
// arithmetic counted. The templates are the same files builtin_kernels.cpp instantiates; they
// are included inside namespace metrale_profiled so these instantiations never merge with the
// plain ones at link time.
// Invariant: the same (kernel, params) list as builtin_kernels.cpp; the unit test "profiled and
// plain host kernels match" fails when the two drift apart.
#include <cstdint>
#include <string>

#include "metrale/host/builtin_kernels.hpp"
#include "metrale/host/host_kernel.hpp"
#include "metrale/ops/fp8_act_quant.hpp"
#include "metrale/ops/ssm_ba_gates.hpp"

// clang-format off
#include "metrale/host/cuda_host_prelude.hpp"
namespace metrale_profiled {
#include "fp8_act_quant.cuh"
#include "ssm_ba_gates.cuh"
}  // namespace metrale_profiled
// clang-format on

namespace metrale {

void register_profiled_builtin_host_kernels(HostKernelTable& table) {
  using namespace metrale_profiled::metrale::kernels;
  table.add(make_host_kernel<&dense_gemm_ba_gates_prefill<256, 64>>(std::string(ops::kBaGatesParentKernel),
                                                                    KernelParams{256, 64, 0}));
  table.add(make_host_kernel<&dense_gemm_ba_gates_prefill_hopper<256, 64, 8>>(std::string(ops::kBaGatesTwinKernel),
                                                                              KernelParams{256, 64, 8}));
  table.add(make_host_kernel<&per_token_group_quant_fp8<16, 1>>(std::string(ops::kFp8QuantSharedKernel),
                                                                KernelParams{0, 16, 1}));
  table.add(make_host_kernel<&per_token_group_quant_fp8_hopper<16, 8>>(std::string(ops::kFp8QuantTwinKernel),
                                                                       KernelParams{0, 16, 8}));
}

}  // namespace metrale
