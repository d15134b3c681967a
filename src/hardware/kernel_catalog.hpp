// hardware/kernel_catalog.hpp: the names of the library's own kernels, and checking a set of
// loaded targets against a kernel catalog (metrale/target/hardware_target.hpp).
// Invariant: the hardware layer knows no kernel's rules; the library's kernels are declared by
// the ops layer (ops/op_kernels.hpp) through the same KernelCatalog an engine uses. The names
// here are only spellings shared with the host's built-in instantiations.
#pragma once

#include <span>
#include <string_view>

#include "metrale/target/hardware_target.hpp"

namespace metrale {

inline constexpr std::string_view kSsmBaGates = "ssm_ba_gates";
inline constexpr std::string_view kSsmBaGatesHopper = "ssm_ba_gates_hopper";
inline constexpr std::string_view kFp8ActQuant = "fp8_act_quant";
inline constexpr std::string_view kFp8ActQuantHopper = "fp8_act_quant_hopper";
// The tensor-core BA-gates kernel; its `lanes` is the token tile a block owns (TOKENS).
inline constexpr std::string_view kSsmBaGatesMma = "ssm_ba_gates_mma";
// The decode-size BA-gates kernel (K split over a cluster); `lanes` its token tile, `groups` its outputs per CTA.
inline constexpr std::string_view kSsmBaGatesSplitK = "ssm_ba_gates_splitk";
// The SiLU-and-mul FP8 quant op's kernels: the parent's first step (h = bf16(silu(gate) * up);
// its second is kFp8ActQuant) and the fused twin.
inline constexpr std::string_view kSiluMulBf16 = "silu_mul_bf16";
inline constexpr std::string_view kSiluMulFp8QuantFused = "silu_mul_fp8_quant_fused";

// `base` plus every kernel the targets declare in full; ConfigError "<file>:<line>: kernels.<k>:"
// when one clashes with a declaration of another source or expression.
KernelCatalog complete_catalog(const KernelCatalog& base, std::span<const HardwareTarget> targets);

// Checks every kernel entry of `target` against `catalog`: known name, its parameters, twins in
// their parent's shape. ConfigError "<file>:<line>: kernels.<k>[.<param>]: <reason>".
void check_target_kernels(const HardwareTarget& target, const KernelCatalog& catalog);

}  // namespace metrale
