// ssm_ba_gates_mma_guard.cpp: the tensor-core BA-gates kernel's guard, the combined pick and its
// verdict log.
#include "ops/ssm_ba_gates/ssm_ba_gates_mma_guard.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "metrale/target/levers.hpp"
#include "ops/op_guard_table.hpp"

namespace metrale::ops {

std::uint32_t ba_gates_mma_min_tokens(std::uint32_t sm_count, std::uint32_t tokens_per_block,
                                      std::uint32_t max_cluster_blocks) {
  const std::uint64_t blocks =
      (std::uint64_t{std::max<std::uint32_t>(sm_count, 1)} + kBaGatesMmaSmsPerTile - 1) / kBaGatesMmaSmsPerTile;
  const std::uint64_t split = std::max<std::uint32_t>(max_cluster_blocks, 1);
  const std::uint64_t tiles = (blocks + split - 1) / split;
  const std::uint64_t tokens = tiles * tokens_per_block;
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(tokens, std::numeric_limits<std::uint32_t>::max()));
}

std::uint32_t ba_gates_mma_max_cluster_blocks(std::uint32_t k, std::optional<ComputeCapability> compute_capability) {
  // One token against unlimited SMs: only K and the capability bound the split.
  return ba_gates_mma_cluster_blocks(1, 1, k, std::numeric_limits<std::uint32_t>::max(), compute_capability);
}

std::uint32_t ba_gates_mma_min_m(const BaGatesMmaQuery& query) {
  return ba_gates_mma_min_tokens(query.sm_count, query.tokens_per_block,
                                 ba_gates_mma_max_cluster_blocks(query.k, query.compute_capability));
}

void set_mma_variant(BaGatesMmaQuery& query, const KernelParams& mma,
                     std::optional<ComputeCapability> compute_capability,
                     std::optional<std::uint32_t> device_shared_limit) {
  query.tokens_per_block = mma.lanes;
  query.stages = mma.groups;
  query.compute_capability = compute_capability;
  query.max_shared_bytes = ba_gates_mma_shared_limit(device_shared_limit, compute_capability);
}

std::optional<std::string_view> ssm_ba_gates_mma_reject(const BaGatesMmaQuery& q) {
  return first_failed(
      {{kBaGatesMmaRejects[0], q.requested},
       {kBaGatesMmaRejects[1], q.kernel_present},
       {kBaGatesMmaRejects[2], q.compute_capability && *q.compute_capability >= kBaGatesMmaMinCc},
       {kBaGatesMmaRejects[3], q.n != 0 && q.k != 0},
       {kBaGatesMmaRejects[4], q.n <= kBaGatesMmaMaxN},
       {kBaGatesMmaRejects[5], q.k % 8 == 0 && q.k_stride % 8 == 0},
       {kBaGatesMmaRejects[6], q.k_stride >= q.k},
       {kBaGatesMmaRejects[7], q.aligned},
       {kBaGatesMmaRejects[8], ba_gates_mma_shared_bytes(q.tokens_per_block, q.n, q.stages) <= q.max_shared_bytes},
       {kBaGatesMmaRejects[9], q.m >= ba_gates_mma_min_m(q)}});
}

BaGatesPick ba_gates_pick_with_mma(const BaGatesMmaQuery& query, KernelHandle mma, bool twin_requested,
                                   KernelHandle parent, KernelHandle twin, bool parent_launchable) {
  BaGatesMmaQuery asked = query;
  asked.kernel_present = mma.present();
  const auto mma_reject = ssm_ba_gates_mma_reject(asked);
  if (!mma_reject) {
    BaGatesPick pick{mma, false, std::nullopt};
    pick.mma = true;
    return pick;
  }
  BaGatesPick pick = ba_gates_pick(twin_requested, parent, twin, query.m, query.n, query.k, query.k_stride,
                                   query.sm_count, parent_launchable);
  pick.mma_reject = mma_reject;
  return pick;
}

const GuardTable& ba_gates_mma_guard() {
  static const GuardTable table(kBaGatesMmaRejects);
  return table;
}

namespace {

// The tensor-core guard's word in a combined pick: nullopt when the kernel ran. A pick that
// neither ran it nor says why (none the guard makes) has no reason in the table, so no slot.
std::optional<std::string_view> mma_verdict(const BaGatesPick& pick) {
  if (pick.mma) {
    return std::nullopt;
  }
  return pick.mma_reject.value_or(std::string_view{});
}

}  // namespace

std::optional<OpLogSlot> ba_gates_mma_log_slot(const BaGatesPick& pick, bool requested) {
  // With the lever off nothing is logged, not even a run (which the lever-off guard never gives).
  if (!requested) {
    return std::nullopt;
  }
  return ba_gates_mma_guard().slot_of(mma_verdict(pick), requested);
}

std::optional<std::string> ba_gates_mma_log_line(const BaGatesPick& pick, bool requested, std::uint32_t m,
                                                 const KernelParams& mma, OnceSlots& said) {
  if (!requested || !ba_gates_mma_guard().claim(mma_verdict(pick), requested, said)) {
    return std::nullopt;
  }
  if (!pick.mma) {
    return fmt::format(
        "SSM ba_gates: the tensor-core kernel is NOT running at M={}: {} "
        "(METRALE_SSM_BA_GATES_TENSOR_CORE)",
        m, *pick.mma_reject);
  }
  return fmt::format(
      "SSM ba_gates: ssm_ba_gates_mma (METRALE_SSM_BA_GATES_TENSOR_CORE) M={} block={} tokens/tile={} "
      "grid=(ceil(M/{}) x K split,1,1)",
      m, mma.block, mma.lanes, mma.lanes);
}

OnceSlots& ba_gates_mma_log_slots() { return ba_gates_mma_guard().process_slots(); }

void ba_gates_mma_log(const BaGatesPick& pick, bool requested, std::uint32_t m, const KernelParams& mma) {
  log_verdict_line(ba_gates_mma_log_line(pick, requested, m, mma, ba_gates_mma_log_slots()));
}

}  // namespace metrale::ops
