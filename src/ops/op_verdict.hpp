// ops/op_verdict.hpp: what both ops' twin decisions share: the CTA floor (a twin takes a launch
// only when its grid reaches kMinCtasPerSm CTAs per SM), the SM count a guard sees (the device's,
// else the target's), and the log slot a verdict claims.
// Invariants: one formula for the floor (ba_gates_min_tokens and fp8_quant_min_ctas are this one);
// every SM count a guard sees is at least 1; a slot exists only for the twin, or for a reason in
// the op's list when the lever asked for the twin.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "metrale/gpu/gpu_backend.hpp"
#include "metrale/ops/op_declaration.hpp"
#include "ops/log_once.hpp"

namespace metrale::ops {

// CTAs per SM a twin's grid must reach. A judgement, not a contract: set high, it only sends more
// launches to the parent, which computes the same bits.
inline constexpr std::uint32_t kMinCtasPerSm = 2;

// kMinCtasPerSm x sm_count (0 counts as 1), saturating. Pure.
std::uint32_t min_ctas(std::uint32_t sm_count);

// Whether a twin's grid of `ctas` CTAs at M = m is past its floor: m >= the tuning table's
// measured threshold when there is one at this shape (OpContext::tuned_min_m), else
// ctas >= min_ctas(sm_count), the prediction. Pure; inline: it is on every call's path.
inline bool past_twin_floor(std::uint32_t ctas, std::uint32_t m, std::uint32_t sm_count,
                            std::optional<std::uint32_t> tuned_min_m) {
  return tuned_min_m ? m >= *tuned_min_m : ctas >= min_ctas(sm_count);
}

// OpContext::tuned_min_m with its no-table answer inline: every call of a guarded op asks, and
// almost every runtime has no table (the lookup is out of line).
inline std::optional<std::uint32_t> tuned_threshold(const OpContext& context, std::string_view role, std::uint32_t n,
                                                    std::uint32_t k) {
  return context.tuning == nullptr ? std::nullopt : context.tuned_min_m(role, n, k);
}

// The device's SM count, else `fallback` (the target's sm_count); at least 1.
std::uint32_t device_sm_count(const GpuBackend& gpu, std::uint32_t fallback);

// The slot of a verdict: the twin's when nothing refused it; the reason's index in `rejects` when
// the lever asked for the twin; nullopt otherwise (lever off, or a reason not in the list). Pure.
std::optional<OpLogSlot> op_log_slot(std::optional<std::string_view> reject, bool requested,
                                     std::span<const std::string_view> rejects);

}  // namespace metrale::ops
