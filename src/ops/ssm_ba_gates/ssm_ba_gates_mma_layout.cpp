// ssm_ba_gates_mma_layout.cpp: the tensor-core BA kernel's shared-memory size, the device's
// limit and its K split.
#include "ops/ssm_ba_gates/ssm_ba_gates_mma_layout.hpp"

#include <algorithm>

#include "metrale/gpu/launch_config.hpp"

namespace metrale::ops {

std::uint64_t ba_gates_mma_shared_bytes(std::uint32_t tokens, std::uint32_t n, std::uint32_t stages) {
  constexpr std::uint64_t kTile = 16;
  constexpr std::uint64_t kRowElems = 64 + 8;
  constexpr std::uint64_t kAccRowFloats = 128 + 4;
  const std::uint64_t rows = std::uint64_t{tokens} + (std::uint64_t{n} + kTile - 1) / kTile * kTile;
  const std::uint64_t ring = std::uint64_t{stages} * rows * kRowElems * 2;
  const std::uint64_t acc = std::uint64_t{tokens} * kAccRowFloats * 4;
  return std::max(ring, acc);
}

std::uint64_t ba_gates_mma_shared_limit(std::optional<std::uint32_t> device_limit,
                                        std::optional<ComputeCapability> compute_capability) {
  if (device_limit) {
    return *device_limit;
  }
  return compute_capability ? opt_in_shared_bytes(*compute_capability) : kDefaultSharedBytes;
}

std::uint32_t ba_gates_mma_cluster_blocks(std::uint32_t m, std::uint32_t tokens, std::uint32_t k,
                                          std::uint32_t sm_count, std::optional<ComputeCapability> compute_capability) {
  if (!compute_capability || *compute_capability < kMinClusterCapability || tokens == 0) {
    return 1;
  }
  constexpr std::uint64_t kChunk = 64;
  const std::uint64_t tiles = (std::uint64_t{m} + tokens - 1) / tokens;
  const std::uint64_t chunks = (std::uint64_t{k} + kChunk - 1) / kChunk;
  std::uint32_t blocks = 1;
  while (blocks < kMaxClusterBlocks && 2 * std::uint64_t{blocks} <= chunks && tiles * 2 * blocks <= sm_count) {
    blocks *= 2;
  }
  return blocks;
}

MmaShapeChoice ba_gates_mma_shape_for(std::uint32_t n) {
  constexpr std::uint32_t kTile = 16;
  constexpr std::uint32_t kMaxN = 128;
  if (n == 0) {
    return {0, kMmaShapeNoOutputs};
  }
  if (n > kMaxN) {
    return {0, kMmaShapeTooWide};
  }
  return {(n + kTile - 1) / kTile, {}};
}

}  // namespace metrale::ops
