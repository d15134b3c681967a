// ssm_ba_gates_mma_layout.cpp: the tensor-core BA kernel's shared-memory size and the device's
// limit.
#include "ops/ssm_ba_gates_mma_layout.hpp"

#include <algorithm>

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

}  // namespace metrale::ops
