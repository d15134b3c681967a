// ops/silu_mul_fp8_quant_kernels.hpp: the SiLU-and-mul FP8 quant op's kernels as catalog
// declarations (template file, name expressions, parameters, rules), added to the library's
// catalog by ops/op_kernels.cpp.
// Invariants: this file and op_kernels.hpp are the only places that spell a library name
// expression; the parent's quant step is the FP8 op's shared kernel (declared there), not a
// declaration of its own; the twin is a background variant (until it arrives its guard says
// "kernel absent" and the parent, which computes the same bytes, runs).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "metrale/target/hardware_target.hpp"
#include "target/kernel_catalog.hpp"

namespace metrale::ops {

inline constexpr std::string_view kSiluMulParentKernel = kSiluMulBf16;
inline constexpr std::string_view kSiluMulTwinKernel = kSiluMulFp8QuantFused;
inline constexpr std::string_view kSiluMulParentTemplate = "metrale::kernels::silu_mul_bf16";
inline constexpr std::string_view kSiluMulTwinTemplate = "metrale::kernels::silu_mul_per_token_group_quant_fp8";
inline constexpr std::string_view kSiluMulTemplateFile = "silu_mul_fp8_quant.cuh";

// The parent's SiLU-mul step: {BLOCK} threads, one 16-byte vector each.
inline constexpr std::uint32_t kSiluMulBlock = 256;
// The twin: {LANES, GROUPS} as the FP8 twin (a team of LANES lanes per 128-element group, GROUPS
// groups per CTA); the shipped shape, the FP8 Hopper twin's.
inline constexpr std::uint32_t kSiluMulTwinLanes = 4;
inline constexpr std::uint32_t kSiluMulTwinGroups = 8;

// {block}: whole warps in [32, 1024]; lanes and groups absent.
std::optional<KernelParamsProblem> check_silu_mul_bf16(const KernelParams& p);

// Adds silu_mul_bf16 and silu_mul_fp8_quant_fused to `catalog` (the twin's rule is the FP8
// twin's: check_fp8_act_quant_hopper).
void add_silu_mul_fp8_quant_kernels(KernelCatalog& catalog);

}  // namespace metrale::ops
