// ssm_ba_gates_mapping.cpp: the BA-gates index mappings, mirrored from src/ops/ssm_ba_gates/ssm_ba_gates.cuh.
#include "ops/ssm_ba_gates/ssm_ba_gates_mapping.hpp"

#include "ops/ssm_ba_gates/ssm_ba_gates_guard.hpp"

namespace metrale::ops {

std::vector<std::uint32_t> ba_gates_lane_kv(std::uint32_t lane, std::uint32_t k_vec) {
  std::vector<std::uint32_t> out;
  for (std::uint64_t kv = lane; kv < k_vec; kv += kBaGatesLanes) {
    out.push_back(static_cast<std::uint32_t>(kv));
  }
  return out;
}

std::uint32_t ba_gates_output(std::uint32_t group, std::uint32_t local_out) { return group * kBaGatesOuts + local_out; }

std::uint32_t ba_gates_warp(std::uint32_t local_out, std::uint32_t lane) { return local_out * 2 + lane / 32; }

std::pair<std::uint32_t, std::uint32_t> ba_gates_cross_warp_pair(std::uint32_t local_out) {
  return {local_out * 2, local_out * 2 + 1};
}

BaGatesSlot ba_gates_slot(std::uint32_t n, std::uint32_t vheads_per_group) {
  const std::uint32_t group_dim = 2 * vheads_per_group;
  const std::uint32_t within = n % group_dim;
  const std::uint32_t base = (n / group_dim) * vheads_per_group;
  if (within < vheads_per_group) {
    return BaGatesSlot{true, base + within};
  }
  return BaGatesSlot{false, base + (within - vheads_per_group)};
}

std::uint32_t ba_gates_twin_row_reads(std::uint32_t n, std::uint32_t outs, std::uint32_t groups) {
  const std::uint32_t output_groups = (n + outs - 1) / outs;
  return (output_groups + groups - 1) / groups * outs;
}

}  // namespace metrale::ops
