// ops/op_kernel_rules.cpp: the parameter rules of the library's five kernels, as their
// catalog declarations carry them (ops/op_kernels.cpp).
// Why these rules: ssm_ba_gates reduces one output over 64 lanes (a 32-lane xor-shuffle
// per warp, then warp_even + warp_odd), so lanes is fixed and block holds whole outputs;
// fp8_act_quant gives each team of 16, 8 or 4 lanes one 128-element group (each lane 8, 16 or
// 32 bf16), and the block is lanes * groups, never set on its own; ssm_ba_gates_mma's `lanes` is its
// token tile (16-row MMA tiles, at most 128), split evenly over its warps with 8 output tiles per
// token tile, and its `groups` the K stages of its shared-memory ring, which at N = 128 must fit
// the 227 KiB the largest devices grant a block (a smaller device's guard refuses what does not
// fit it).
#include "ops/op_kernel_rules.hpp"

#include <fmt/format.h>

#include "metrale/gpu/compute_capability.hpp"
#include "metrale/ops/ssm_ba_gates.hpp"
#include "ops/ssm_ba_gates/ssm_ba_gates.hpp"

namespace metrale::ops {
namespace {

constexpr std::uint32_t kBaLanes = 64;
constexpr std::uint32_t kMaxBlock = 1024;
constexpr std::uint32_t kBaMaxGroups = 16;
constexpr std::uint32_t kQuantLanes = 16;
constexpr std::uint32_t kQuantMaxGroups = 32;
constexpr std::uint32_t kMmaTile = 16;
constexpr std::uint32_t kMmaMaxTokens = 128;
constexpr std::uint32_t kMmaMinStages = 2;
constexpr std::uint32_t kMmaMaxStages = 16;
constexpr std::uint32_t kMmaOutTiles = 8;

using Problem = std::optional<KernelParamsProblem>;

Problem problem(std::string_view param, std::string reason) { return KernelParamsProblem{param, std::move(reason)}; }

Problem check_ba_shape(const KernelParams& p) {
  if (p.lanes != kBaLanes) {
    return problem("lanes", fmt::format("lanes = {}: must be {} (a 32-lane shuffle per warp, then a pairwise "
                                        "cross-warp sum: exactly two warps per output)",
                                        p.lanes, kBaLanes));
  }
  if (p.block < kBaLanes || p.block > kMaxBlock || p.block % p.lanes != 0) {
    return problem("block", fmt::format("block = {}: must be a multiple of lanes ({}) in [{}, {}]", p.block, p.lanes,
                                        kBaLanes, kMaxBlock));
  }
  return std::nullopt;
}

Problem check_quant_lanes(const KernelParams& p) {
  if (p.lanes != kQuantLanes && p.lanes != kQuantLanes / 2 && p.lanes != kQuantLanes / 4) {
    return problem("lanes", fmt::format("lanes = {}: must be 16, 8 or 4 (a 128-element group is 16 lanes x 8 bf16, "
                                        "8 x 16 or 4 x 32)",
                                        p.lanes));
  }
  if (p.block != 0) {
    return problem("block", fmt::format("block = {}: must be absent (the block is lanes x groups)", p.block));
  }
  return std::nullopt;
}

}  // namespace

Problem check_ssm_ba_gates(const KernelParams& p) {
  if (auto shape = check_ba_shape(p)) {
    return shape;
  }
  if (p.groups != 0) {
    return problem("groups", fmt::format("groups = {}: must be absent (one output group per block)", p.groups));
  }
  return std::nullopt;
}

Problem check_ssm_ba_gates_hopper(const KernelParams& p) {
  if (auto shape = check_ba_shape(p)) {
    return shape;
  }
  if (p.groups < 1 || p.groups > kBaMaxGroups) {
    return problem("groups", fmt::format("groups = {}: must be in [1, {}]", p.groups, kBaMaxGroups));
  }
  return std::nullopt;
}

Problem check_ssm_ba_gates_mma(const KernelParams& p) {
  if (p.lanes < kMmaTile || p.lanes > kMmaMaxTokens || p.lanes % kMmaTile != 0) {
    return problem("lanes", fmt::format("lanes = {}: the token tile must be a multiple of {} in [{}, {}] (16-row MMA "
                                        "tiles)",
                                        p.lanes, kMmaTile, kMmaTile, kMmaMaxTokens));
  }
  const std::uint32_t token_tiles = p.lanes / kMmaTile;
  if (p.block < 32 || p.block > kMaxBlock || p.block % 32 != 0 || (p.block / 32) % token_tiles != 0 ||
      kMmaOutTiles % (p.block / 32 / token_tiles) != 0) {
    return problem("block", fmt::format("block = {}: must be whole warps in [32, {}], a multiple of the {} token "
                                        "tiles, with warps per token tile dividing {} output tiles",
                                        p.block, kMaxBlock, token_tiles, kMmaOutTiles));
  }
  if (p.groups < kMmaMinStages || p.groups > kMmaMaxStages) {
    return problem(
        "groups", fmt::format("groups = {}: the K stages must be in [{}, {}]", p.groups, kMmaMinStages, kMmaMaxStages));
  }
  const std::uint64_t shared = ba_gates_mma_shared_bytes(p.lanes, kBaGatesMmaMaxN, p.groups);
  if (shared > kMaxOptInSharedBytes) {
    return problem("groups", fmt::format("groups = {}: {} stages of {} tokens and 128 outputs need {} bytes of shared "
                                         "memory, past the {} a block may have",
                                         p.groups, p.groups, p.lanes, shared, kMaxOptInSharedBytes));
  }
  if (p.shape > kMmaOutTiles) {
    return problem("shape", fmt::format("shape = {}: the output tiles of a specialised variant must be in [1, {}] (0: "
                                        "the generic form)",
                                        p.shape, kMmaOutTiles));
  }
  return std::nullopt;
}

Problem check_fp8_act_quant(const KernelParams& p) {
  if (auto lanes = check_quant_lanes(p)) {
    return lanes;
  }
  if (p.groups != 1) {
    return problem("groups", fmt::format("groups = {}: must be 1 (one group per CTA)", p.groups));
  }
  return std::nullopt;
}

Problem check_fp8_act_quant_hopper(const KernelParams& p) {
  if (auto lanes = check_quant_lanes(p)) {
    return lanes;
  }
  if (p.groups < 1 || p.groups > kQuantMaxGroups || p.lanes * p.groups > kMaxBlock) {
    return problem("groups", fmt::format("groups = {}: must be in [1, {}] with lanes x groups <= {}", p.groups,
                                         kQuantMaxGroups, kMaxBlock));
  }
  return std::nullopt;
}

}  // namespace metrale::ops
