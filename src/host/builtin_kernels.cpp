// host/builtin_kernels.cpp: the shipped kernel variants, instantiated for the host from the
// same templates/ NVRTC compiles. The prelude comes first so the templates see CUDA's names.
// Invariant: every (kernel, params) any HARDWARE.toml ships has an entry here; the unit test
// "every shipped variant has a host instantiation" fails when one is missing.
// This file is compiled with -fno-strict-aliasing (CMakeLists.txt): the kernels move bf16
// and fp8 elements through uint4/uint2 words, as CUDA code does.
#include "host/builtin_kernels.hpp"

// clang-format off
#include "metrale/host/cuda_host_prelude.hpp"
#include "fp8_act_quant.cuh"
#include "ssm_ba_gates.cuh"
#include "ssm_ba_gates_mma.cuh"
// clang-format on

#include "metrale/host/host_kernel.hpp"
#include "target/kernel_catalog.hpp"

namespace metrale {

void register_builtin_host_kernels(HostKernelTable& table) {
  using namespace metrale::kernels;
  table.add(
      make_host_kernel<&dense_gemm_ba_gates_prefill<256, 64>>(std::string(kSsmBaGates), KernelParams{256, 64, 0}));
  table.add(make_host_kernel<&dense_gemm_ba_gates_prefill_hopper<256, 64, 8>>(std::string(kSsmBaGatesHopper),
                                                                              KernelParams{256, 64, 8}));
  table.add(make_host_kernel<&ssm_ba_gates_mma<256, 64>>(std::string(kSsmBaGatesMma), KernelParams{256, 64, 0}));
  table.add(make_host_kernel<&per_token_group_quant_fp8<16, 1>>(std::string(kFp8ActQuant), KernelParams{0, 16, 1}));
  table.add(make_host_kernel<&per_token_group_quant_fp8_hopper<16, 8>>(std::string(kFp8ActQuantHopper),
                                                                       KernelParams{0, 16, 8}));
}

}  // namespace metrale
