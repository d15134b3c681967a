// ops/silu_mul_fp8_quant_guard.hpp: when the fused SiLU-and-mul FP8 quant twin
// (silu_mul_fp8_quant_fused) takes a launch instead of the parent pair (silu_mul_bf16, then
// fp8_act_quant): the guard, the pick and the once-per-slot log, in the FP8 op's shape.
// Invariants:
// - the reasons are tried in one order: twin absent; twin present and the parent incomplete (either
//   of its two kernels absent) -> the twin runs; not requested; too few CTAs;
// - the twin's grid is the FP8 twin's (fp8_quant_grid(true, ...)), so the CTA floor is the FP8
//   twin's function of the same grid (fp8_quant_hopper_ctas, op_verdict.hpp's kMinCtasPerSm);
// - the pick sets kernel, grid and block from one decision.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "metrale/gpu/kernel_handle.hpp"
#include "metrale/gpu/kernel_params.hpp"
#include "metrale/gpu/launch_config.hpp"
#include "metrale/ops/fp8_act_quant.hpp"
#include "ops/log_once.hpp"
#include "ops/op_guard_table.hpp"
#include "ops/silu_mul_fp8_quant/silu_mul_fp8_quant_kernels.hpp"

namespace metrale::ops {

// The handles a target built (0 = absent) and their template parameters: the parent's two steps
// ({BLOCK}; the FP8 shared kernel's {LANES, GROUPS}) and the twin ({LANES, GROUPS}).
struct SiluMulFp8QuantKernels {
  KernelHandle silu_mul;
  KernelHandle quant;
  KernelHandle twin;
  KernelParams silu_mul_params{kSiluMulBlock, 0, 0};
  KernelParams quant_params{0, kFp8QuantLanes, 1};
  KernelParams twin_params{0, kSiluMulTwinLanes, kSiluMulTwinGroups};
  // The target's sm_count: what the guard sees when the device cannot say.
  std::uint32_t fallback_sm_count = kFallbackSmCount;

  [[nodiscard]] bool parent_present() const { return silu_mul.present() && quant.present(); }
};

// Which kernels a launch runs and why the twin did not. grid and block are the twin's when it
// runs; the parent's two launches take theirs from their own launchers.
struct SiluMulFp8QuantPick {
  bool twin = false;
  Dim3 grid;
  Dim3 block;
  // nullopt when the twin runs; the refusal reason otherwise.
  std::optional<std::string_view> reject;
  // The lever value the pick was made with.
  bool requested = false;
};

inline constexpr std::string_view kSiluMulTooFewCtas = "too few CTAs to fill the device at 8 K-groups per CTA";

// Every reason silu_mul_fp8_quant_fused_reject can return; one log flag each, by index.
inline constexpr std::array<std::string_view, 3> kSiluMulRejects = {
    "not requested",
    "kernel absent from this image",
    kSiluMulTooFewCtas,
};
inline constexpr std::size_t kSiluMulLogSlots = kSiluMulRejects.size() + 1;

// Why the twin is not running; nullopt means it runs (order: see the invariants above).
std::optional<std::string_view> silu_mul_fp8_quant_fused_reject(bool requested, bool twin_present, bool parent_present,
                                                                std::uint32_t m, std::uint32_t k,
                                                                std::uint32_t sm_count,
                                                                std::uint32_t groups = kSiluMulTwinGroups);

// The smallest m the twin accepts at this k.
std::uint32_t silu_mul_fused_min_m(std::uint32_t k, std::uint32_t sm_count, std::uint32_t groups = kSiluMulTwinGroups);

SiluMulFp8QuantPick silu_mul_fp8_quant_pick(bool requested, const SiluMulFp8QuantKernels& kernels, std::uint32_t m,
                                            std::uint32_t k, std::uint32_t sm_count);

// The slot a verdict logs under, or nullopt when not logged (lever off). Pure.
std::optional<OpLogSlot> silu_mul_log_slot(const SiluMulFp8QuantPick& pick);
// The line the verdict logs if its slot is unclaimed in `said` (claiming it); nullopt otherwise.
std::optional<std::string> silu_mul_log_line(const SiluMulFp8QuantPick& pick, std::uint32_t m, std::uint32_t k,
                                             OnceSlots& said);
// The guard's table (kSiluMulRejects) and the process-wide log slots derived from it.
const GuardTable& silu_mul_guard();
OnceSlots& silu_mul_log_slots();
// Logs the verdict through metrale::logger() at info, once per process per slot.
void silu_mul_log(const SiluMulFp8QuantPick& pick, std::uint32_t m, std::uint32_t k);

}  // namespace metrale::ops
