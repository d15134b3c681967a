// ops/ssm_ba_gates_mapping.hpp: the index mappings the BA-gates parent and twin must
// share (src/ops/ssm_ba_gates/ssm_ba_gates.cuh), as pure functions the tests check on the CPU.
// Invariants: the parent's smem[local_out * 2 + lane / 32] and the twin's
// red[g * WARPS + threadIdx.x / 32] name the same warp because threadIdx.x / 32 ==
// local_out * 2 + lane / 32; an output's beta lands at nv + vh, its gate at vh.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace metrale::ops {

// The kv indices (16-byte vectors) lane `lane` accumulates, in order: kv = lane, lane + 64, ...
// below k_vec. The order is the reduction order.
std::vector<std::uint32_t> ba_gates_lane_kv(std::uint32_t lane, std::uint32_t k_vec);

// The output a thread owns: group * kBaGatesOuts + local_out (the parent's group is
// blockIdx.y; the twin's is g0 + g, walking 0 .. ceil(N/4) in tiles of kBaGatesGroups).
std::uint32_t ba_gates_output(std::uint32_t group, std::uint32_t local_out);

// The block-wide warp that holds lane `lane` of output `local_out`.
std::uint32_t ba_gates_warp(std::uint32_t local_out, std::uint32_t lane);

// The two warp partials summed for output `local_out`, in order (even, odd).
std::pair<std::uint32_t, std::uint32_t> ba_gates_cross_warp_pair(std::uint32_t local_out);

// Where output n lands in its token's [gate(nv), beta(nv)] row: within each group of
// 2 * vheads_per_group outputs the first half is beta, the second gate.
struct BaGatesSlot {
  bool beta = false;
  std::uint32_t vh = 0;
  // The column in the gate row: nv + vh for beta, vh for gate.
  [[nodiscard]] constexpr std::uint32_t column(std::uint32_t nv) const { return beta ? nv + vh : vh; }
  friend constexpr bool operator==(const BaGatesSlot&, const BaGatesSlot&) = default;
};
BaGatesSlot ba_gates_slot(std::uint32_t n, std::uint32_t vheads_per_group);

// How many times the twin reads a token's activation row: ceil(ceil(N / outs) / groups) * outs.
std::uint32_t ba_gates_twin_row_reads(std::uint32_t n, std::uint32_t outs, std::uint32_t groups);

}  // namespace metrale::ops
