// ops/fp8_act_quant_floor.hpp: when the Hopper FP8 activation-quant twin
// (per_token_group_quant_fp8_hopper) takes a launch instead of the shared kernel
// (per_token_group_quant_fp8): the CTA floor, the one grid function, the guard, the pick and
// the once-per-slot log.
// Invariants:
// - with the twin present and no shared kernel, fp8_act_quant_hopper_reject returns nullopt
//   (the twin runs) whatever the lever and the floor say;
// - fp8_quant_grid is the only source of both kernels' grids: the floor counts the CTAs of the
//   grid the twin launches, and the pick sets handle and grid from one decision.
// The twin packs 8 K-groups into a CTA, so its grid has about an eighth of the shared kernel's
// CTAs; it takes a launch only when that grid has >= 2 x sm_count CTAs. At sm_count = 132 the
// smallest M it takes is 53 (K = 5120), 44 (K = 6144), 16 (K = 17408).
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
#include "ops/op_verdict.hpp"

namespace metrale::ops {

// CTAs per SM the twin's grid must reach (op_verdict.hpp's floor, shared with BA gates).
inline constexpr std::uint32_t kFp8QuantMinCtasPerSm = kMinCtasPerSm;

inline constexpr std::string_view kFp8QuantTooFewCtas = "too few CTAs to fill the device at 8 K-groups per CTA";

// Every reason fp8_act_quant_hopper_reject can return; one log flag each, by index.
inline constexpr std::array<std::string_view, 3> kFp8QuantRejects = {
    "not requested",
    "kernel absent from this image (kernels/hopper only)",
    kFp8QuantTooFewCtas,
};
inline constexpr std::size_t kFp8QuantLogSlots = kFp8QuantRejects.size() + 1;

// The grid of either kernel for an (m, k) row set: (m, ceil(K/128 / groups), 1) for the twin
// and (m, K/128 / groups, 1) for the shared kernel (the catalog fixes its groups at 1), `groups` being the
// K-groups per CTA of that kernel (the twin's 8 by default; the shared kernel ships with 1).
Dim3 fp8_quant_grid(bool twin, std::uint32_t m, std::uint32_t k, std::uint32_t groups = kFp8QuantGroups);

// The smallest twin grid, in CTAs, the floor accepts; sm_count 0 counts as 1; saturating.
std::uint32_t fp8_quant_min_ctas(std::uint32_t sm_count);
// CTAs the twin's grid launches for (m, k): the volume of fp8_quant_grid(true, ...), saturating.
std::uint32_t fp8_quant_hopper_ctas(std::uint32_t m, std::uint32_t k, std::uint32_t groups = kFp8QuantGroups);
// The smallest m the twin accepts at this k.
std::uint32_t fp8_quant_hopper_min_m(std::uint32_t k, std::uint32_t sm_count, std::uint32_t groups = kFp8QuantGroups);

// Why the twin is not running; nullopt means it runs. Order: twin absent; twin present and
// shared absent -> runs; not requested; too few CTAs.
std::optional<std::string_view> fp8_act_quant_hopper_reject(bool requested, bool twin_present, bool shared_present,
                                                            std::uint32_t m, std::uint32_t k, std::uint32_t sm_count,
                                                            std::uint32_t groups = kFp8QuantGroups);

// One decision sets handle, grid and block together.
Fp8QuantPick fp8_quant_pick(bool requested, const Fp8QuantKernels& kernels, std::uint32_t m, std::uint32_t k,
                            std::uint32_t sm_count);

// The slot a verdict logs under, or nullopt when not logged (lever off). Pure.
std::optional<OpLogSlot> fp8_quant_log_slot(const Fp8QuantPick& pick);
// The line the verdict logs if its slot is unclaimed in `said` (claiming it); nullopt otherwise.
std::optional<std::string> fp8_quant_log_line(const Fp8QuantPick& pick, std::uint32_t m, std::uint32_t k,
                                              OnceSlots& said);
// The guard's table (kFp8QuantRejects) and the process-wide log slots derived from it.
const GuardTable& fp8_quant_guard();
OnceSlots& fp8_quant_log_slots();
// Logs the verdict through metrale::logger() at info, once per process per slot.
void fp8_quant_log(const Fp8QuantPick& pick, std::uint32_t m, std::uint32_t k);

}  // namespace metrale::ops
