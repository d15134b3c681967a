// host/builtin_kernel_list.hpp: the one list of shipped kernel variants the host backend
// instantiates, expanded twice: plainly (builtin_kernels.cpp) and as a profiled unit
// (profiled_builtin_kernels.cpp), whose templates live in another namespace. A macro because the
// two expansions differ only in the namespace the templates were included into.
// Invariant: every (kernel, params) any HARDWARE.toml ships is here (with the shape constants it
// pins: ssm_ba_gates_mma at N = 96, 6 output tiles); the unit test "every shipped
// variant has a host instantiation" fails when one is missing.
#pragma once

#include <string>

#include "hardware/kernel_catalog.hpp"
#include "metrale/host/host_kernel.hpp"

// Adds every shipped variant to `table`; the kernel templates must be visible unqualified.
#define METRALE_ADD_BUILTIN_HOST_KERNELS(table)                                                                      \
  do {                                                                                                               \
    (table).add(::metrale::make_host_kernel<&dense_gemm_ba_gates_prefill<256, 64>>(                                  \
        std::string(::metrale::kSsmBaGates), ::metrale::KernelParams{256, 64, 0}));                                  \
    (table).add(::metrale::make_host_kernel<&dense_gemm_ba_gates_prefill_hopper<256, 64, 8>>(                        \
        std::string(::metrale::kSsmBaGatesHopper), ::metrale::KernelParams{256, 64, 8}));                            \
    (table).add(::metrale::make_host_kernel<&ssm_ba_gates_mma<256, 128, 6>>(std::string(::metrale::kSsmBaGatesMma),  \
                                                                            ::metrale::KernelParams{256, 128, 6}));  \
    (table).add(::metrale::make_host_kernel<&ssm_ba_gates_mma<256, 128, 6, 6>>(                                      \
        std::string(::metrale::kSsmBaGatesMma), ::metrale::KernelParams{256, 128, 6, 6}));                           \
    (table).add(::metrale::make_host_kernel<&ssm_ba_gates_mma<256, 64, 3>>(std::string(::metrale::kSsmBaGatesMma),   \
                                                                           ::metrale::KernelParams{256, 64, 3}));    \
    (table).add(::metrale::make_host_kernel<&per_token_group_quant_fp8<16, 1>>(std::string(::metrale::kFp8ActQuant), \
                                                                               ::metrale::KernelParams{0, 16, 1}));  \
    (table).add(::metrale::make_host_kernel<&per_token_group_quant_fp8_hopper<16, 8>>(                               \
        std::string(::metrale::kFp8ActQuantHopper), ::metrale::KernelParams{0, 16, 8}));                             \
    (table).add(::metrale::make_host_kernel<&per_token_group_quant_fp8_hopper<4, 8>>(                                \
        std::string(::metrale::kFp8ActQuantHopper), ::metrale::KernelParams{0, 4, 8}));                              \
    (table).add(::metrale::make_host_kernel<&silu_mul_bf16<256>>(std::string(::metrale::kSiluMulBf16),               \
                                                                 ::metrale::KernelParams{256, 0, 0}));               \
    (table).add(::metrale::make_host_kernel<&silu_mul_per_token_group_quant_fp8<4, 8>>(                              \
        std::string(::metrale::kSiluMulFp8QuantFused), ::metrale::KernelParams{0, 4, 8}));                           \
    (table).add(::metrale::make_host_kernel<&fused_add_rmsnorm_bf16<128>>(std::string("fused_add_rmsnorm"),          \
                                                                          ::metrale::KernelParams{128, 0, 0}));      \
    (table).add(::metrale::make_host_kernel<&fused_add_rmsnorm_bf16_vec<128>>(std::string("fused_add_rmsnorm_vec"),  \
                                                                              ::metrale::KernelParams{128, 0, 0}));  \
  } while (false)
