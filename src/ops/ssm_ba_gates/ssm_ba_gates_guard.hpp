// ops/ssm_ba_gates_guard.hpp: when the Hopper BA-gates twin
// (dense_gemm_ba_gates_prefill_hopper) takes a launch instead of the parent
// (dense_gemm_ba_gates_prefill), and the once-per-slot log of that choice.
// Invariants:
// - ba_gates_pick returns the twin only when ssm_ba_gates_hopper_reject returns nullopt;
// - every reason the guard returns is in kBaGatesRejects, in the order the guard tests them,
//   and has its own log slot;
// - everything here but ba_gates_log is pure.
// The twin runs one block per token, so its grid is the token count; below
// kBaGatesMinCtasPerSm x sm_count tokens (the batched decode) it declines and the parent, which
// computes the same bits, runs.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "metrale/gpu/gpu_backend.hpp"
#include "metrale/gpu/kernel_handle.hpp"
#include "metrale/ops/ssm_ba_gates.hpp"
#include "ops/log_once.hpp"
#include "ops/op_guard_table.hpp"
#include "ops/op_verdict.hpp"

namespace metrale::ops {

// Tokens per SM the twin needs before it takes a launch (one CTA per token).
inline constexpr std::uint32_t kBaGatesMinCtasPerSm = kMinCtasPerSm;

// The token-count guard's reason, named so tests can match it.
inline constexpr std::string_view kBaGatesTooFewTokens = "too few tokens to fill the device at one CTA per token";

// Every reason ssm_ba_gates_hopper_reject can return, in the order it tests them.
inline constexpr std::array<std::string_view, 6> kBaGatesRejects = {
    "not requested",
    "kernel absent from this image (kernels/hopper only)",
    "empty BA projection",
    "K is not a multiple of 8 (the uint4 K sweep would drop a tail)",
    "K_stride < K: the activation row is shorter than the reduction",
    kBaGatesTooFewTokens,
};

// Once-flags ba_gates_log keeps: one per reason, plus the twin's.
inline constexpr std::size_t kBaGatesLogSlots = kBaGatesRejects.size() + 1;

// The smallest token count the twin accepts with `sm_count` SMs (0 counts as 1); saturating.
std::uint32_t ba_gates_min_tokens(std::uint32_t sm_count);

// Why the twin does not run; nullopt means it runs. Tested in the order of kBaGatesRejects.
std::optional<std::string_view> ssm_ba_gates_hopper_reject(bool requested, bool kernel_present, std::uint32_t m,
                                                           std::uint32_t n, std::uint32_t k, std::uint32_t k_stride,
                                                           std::uint32_t sm_count);

// The one place the parent/twin rule lives: the twin exactly when the guard says nullopt, or when
// the parent cannot launch the shape (`parent_launchable` false: its grid.y, ceil(N / outputs per
// block), is past CUDA's 65535) and the guard declined only for the lever or the token floor;
// the twin's grid is (M, 1, 1) whatever N is.
BaGatesPick ba_gates_pick(bool requested, KernelHandle parent, KernelHandle twin, std::uint32_t m, std::uint32_t n,
                          std::uint32_t k, std::uint32_t k_stride, std::uint32_t sm_count,
                          bool parent_launchable = true);

// The slot a verdict logs under, or nullopt when it is not logged (lever off: the parent is
// the expected outcome). Pure, so tests replay call sequences.
std::optional<OpLogSlot> ba_gates_log_slot(const BaGatesPick& pick, bool requested);

// The line the verdict logs if its slot is still unclaimed in `said` (claiming it), naming the
// M it was first reached at; nullopt otherwise.
std::optional<std::string> ba_gates_log_line(const BaGatesPick& pick, bool requested, std::uint32_t m, OnceSlots& said);

// The guard's table (kBaGatesRejects) and the process-wide log slots derived from it.
const GuardTable& ba_gates_guard();
// The process-wide once-flags of ba_gates_log.
OnceSlots& ba_gates_log_slots();

// Logs the verdict through metrale::logger() at info, once per process per slot.
void ba_gates_log(const BaGatesPick& pick, bool requested, std::uint32_t m);

}  // namespace metrale::ops
