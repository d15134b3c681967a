// ops/ssm_ba_gates_mma_guard.hpp: when the tensor-core BA-gates kernel (ssm_ba_gates_mma)
// takes a launch, ahead of the seeds' twin/parent pick, and the once-per-slot log of that choice.
// Invariants:
// - ssm_ba_gates_mma_reject is pure and tests its reasons in the order of kBaGatesMmaRejects;
// - ba_gates_pick_with_mma picks ssm_ba_gates_mma exactly when that guard says none, and
//   otherwise returns ba_gates_pick's verdict unchanged (kernel, twin, reject), so with the
//   tensor-core lever off every decision is the seeds';
// - every reason has its own log slot, and nothing is logged when the lever is off.
// The kernel computes the same gates as the parent but not the same bytes (another summation
// order; relative Frobenius error against the float64 oracle below 1e-5).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "metrale/gpu/compute_capability.hpp"
#include "metrale/gpu/gpu_backend.hpp"
#include "metrale/gpu/kernel_handle.hpp"
#include "metrale/ops/ssm_ba_gates.hpp"
#include "ops/log_once.hpp"
#include "ops/op_guard_table.hpp"
#include "ops/ssm_ba_gates/ssm_ba_gates_guard.hpp"
#include "ops/ssm_ba_gates/ssm_ba_gates_mma_layout.hpp"

namespace metrale::ops {

// bf16 wmma exists from sm_80.
inline constexpr ComputeCapability kBaGatesMmaMinCc{8, 0};

inline constexpr std::string_view kBaGatesMmaTooFewTokens =
    "too few tokens (fewer blocks, token tiles x K splits, than a twelfth of the SMs, where the parent is faster)";
// SMs per block the kernel needs at least: 1 block per 12 SMs. Fitted on an H200 (132 SMs,
// 2026-11-30, BENCHMARKS.md) with the kernel before clusters: its time was ~75-86 us from 1 to 128
// tiles (each block one latency-bound pass over all of K), the parent's grows ~0.1 us per token;
// they crossed near 640 tokens (10 tiles): 78 vs 40 us at 264 tokens, 77 vs 116 us at 1024.
// Carried to clusters on the assumption (not yet measured) that a CTA's time follows its share of
// the K chunks, so a tile split s ways counts as s blocks.
inline constexpr std::uint32_t kBaGatesMmaSmsPerTile = 12;
// Every reason ssm_ba_gates_mma_reject can return, in the order it tests them.
inline constexpr std::array<std::string_view, 10> kBaGatesMmaRejects = {
    "not requested",
    "kernel absent from this image",
    "compute capability below 8.0 or unknown (bf16 tensor-core MMA needs sm_80)",
    "empty BA projection",
    "N > 128 (a block holds at most 8 output tiles of 16)",
    "K or K_stride is not a multiple of 8 (the tiles are copied in 16-byte vectors)",
    "K_stride < K: the activation row is shorter than the reduction",
    "x or weight is not 16-byte aligned",
    "its K stages need more shared memory than the device grants a block",
    kBaGatesMmaTooFewTokens,
};

// Once-flags ba_gates_mma_log keeps: one per reason, plus the kernel's own.
inline constexpr std::size_t kBaGatesMmaLogSlots = kBaGatesMmaRejects.size() + 1;

// What the tensor-core guard looks at.
struct BaGatesMmaQuery {
  bool requested = false;  // the ssm_ba_gates_tensor_core lever
  bool kernel_present = false;
  std::optional<ComputeCapability> compute_capability;
  std::uint32_t m = 0, n = 0, k = 0, k_stride = 0;
  bool aligned = true;  // x and weight 16-byte aligned
  std::uint32_t sm_count = 0;
  std::uint32_t tokens_per_block = kBaGatesMmaTokens;
  std::uint32_t stages = kBaGatesMmaStages;
  // The device's opt-in limit per block (GpuBackend::max_dynamic_shared_bytes, else the
  // capability's, else 48 KiB).
  std::uint64_t max_shared_bytes = kDefaultSharedBytes;
};

// The smallest M the kernel takes: tokens_per_block x ceil(ceil(sm_count / kBaGatesMmaSmsPerTile)
// / max_cluster_blocks) (sm_count 0 counts as 1), saturating, where max_cluster_blocks is the
// most CTAs a tile may be split into (ba_gates_mma_cluster_blocks with the SMs to spare: 8 on
// sm_90+ when K has 8 chunks, 1 below sm_90): 256 on 132 SMs at K 5120 with 128-token tiles,
// 1408 without clusters. A judgement, not a contract: below it the seeds' kernels, one block per
// token, finish first.
std::uint32_t ba_gates_mma_min_tokens(std::uint32_t sm_count, std::uint32_t tokens_per_block = kBaGatesMmaTokens,
                                      std::uint32_t max_cluster_blocks = 1);
// The most CTAs ba_gates_mma_cluster_blocks splits one token tile into at this K and capability.
std::uint32_t ba_gates_mma_max_cluster_blocks(std::uint32_t k, std::optional<ComputeCapability> compute_capability);
// The smallest M the guard's last rule lets through for the query's device, variant and K (its
// m is ignored): what explain reports.
std::uint32_t ba_gates_mma_min_m(const BaGatesMmaQuery& query);

// Fills what the query takes from the kernel variant and the device: the token tile (`lanes`),
// the stages (`groups`), the compute capability and the shared memory limit
// (ba_gates_mma_shared_limit). The op, the C API's explain and the CLI's explain all use it.
void set_mma_variant(BaGatesMmaQuery& query, const KernelParams& mma,
                     std::optional<ComputeCapability> compute_capability,
                     std::optional<std::uint32_t> device_shared_limit);

// Why the tensor-core kernel does not run; nullopt means it runs. Pure.
std::optional<std::string_view> ssm_ba_gates_mma_reject(const BaGatesMmaQuery& query);

// The whole BA decision: ssm_ba_gates_mma when its guard says none (query.kernel_present is
// taken from `mma`), else ba_gates_pick(twin_requested, parent, twin, ...) exactly, with the
// tensor-core guard's reason in mma_reject.
BaGatesPick ba_gates_pick_with_mma(const BaGatesMmaQuery& query, KernelHandle mma, bool twin_requested,
                                   KernelHandle parent, KernelHandle twin, bool parent_launchable = true);

// The slot the tensor-core verdict logs under, or nullopt (lever off, or a reason not listed).
std::optional<OpLogSlot> ba_gates_mma_log_slot(const BaGatesPick& pick, bool requested);

// The line the tensor-core verdict logs if its slot is still unclaimed in `said` (claiming it);
// `mma` is the variant the launch uses (its block and token tile are in the line).
std::optional<std::string> ba_gates_mma_log_line(const BaGatesPick& pick, bool requested, std::uint32_t m,
                                                 const KernelParams& mma, OnceSlots& said);

// The guard's table (kBaGatesMmaRejects) and the process-wide log slots derived from it.
const GuardTable& ba_gates_mma_guard();
OnceSlots& ba_gates_mma_log_slots();

// Logs the tensor-core verdict through metrale::logger() at info, once per process per slot.
void ba_gates_mma_log(const BaGatesPick& pick, bool requested, std::uint32_t m, const KernelParams& mma);

// The tensor-core guard's query for these arguments on `gpu` (SM count, compute capability).
BaGatesMmaQuery ba_gates_mma_query(const GpuBackend& gpu, const BaGatesKernels& kernels, bool tensor_core,
                                   const BaGatesArgs& args);

}  // namespace metrale::ops
