// profile/occupancy.cpp: blocks per SM, as CUDA's occupancy calculator counts them (registers
// allocated per warp in units of 256, shared memory per block as reported).
#include "profile/occupancy.hpp"

#include <algorithm>

namespace metrale {
namespace {

constexpr std::uint32_t kWarpSize = 32;
constexpr std::uint32_t kRegisterUnit = 256;

}  // namespace

SmLimits sm_limits(const std::optional<ComputeCapability>& capability) {
  SmLimits limits;
  if (capability && capability->major == 12) {  // consumer and GB10 Blackwell: 1536 threads, 24 blocks
    limits.max_threads = 1536;
    limits.max_blocks = 24;
    limits.shared_bytes = 100 * 1024;
  }
  return limits;
}

Occupancy occupancy(const SmLimits& limits, std::uint32_t threads_per_block, std::optional<int> registers,
                    std::uint32_t shared_bytes) {
  Occupancy out;
  if (threads_per_block == 0) {
    return out;
  }
  const std::uint32_t warps = (threads_per_block + kWarpSize - 1) / kWarpSize;
  std::uint32_t blocks = std::min(limits.max_blocks, limits.max_threads / (warps * kWarpSize));
  if (registers && *registers > 0) {
    const auto per_warp =
        (static_cast<std::uint32_t>(*registers) * kWarpSize + kRegisterUnit - 1) / kRegisterUnit * kRegisterUnit;
    blocks = std::min(blocks, limits.registers / (per_warp * warps));
  }
  if (shared_bytes > 0) {
    blocks = std::min(blocks, limits.shared_bytes / shared_bytes);
  }
  out.blocks_per_sm = blocks;
  out.fraction = static_cast<double>(blocks * warps) / static_cast<double>(limits.max_threads / kWarpSize);
  return out;
}

}  // namespace metrale
