// gpu/cluster_launch.cpp: the cluster launch rules (see the header).
#include "gpu/cluster_launch.hpp"

#include <fmt/format.h>

namespace metrale {

std::optional<std::string> cluster_launch_problem(const LaunchConfig& config, ComputeCapability device) {
  const std::uint32_t cluster = config.cluster_blocks;
  if (cluster == 1) {
    return std::nullopt;
  }
  if (cluster == 0) {
    return std::string("cluster of 0 blocks (LaunchConfig::cluster_blocks): 1 means no cluster");
  }
  if (cluster > kMaxClusterBlocks) {
    return fmt::format("cluster of {} blocks exceeds the portable cluster size of {} blocks", cluster,
                       kMaxClusterBlocks);
  }
  if (config.grid.x % cluster != 0) {
    return fmt::format("grid.x {} (grid {}) is not a multiple of the cluster of {} blocks", config.grid.x,
                       to_string(config.grid), cluster);
  }
  if (device < kMinClusterCapability) {
    return fmt::format(
        "a cluster launch ({} blocks per cluster) needs compute capability {} or newer; the device is {}", cluster,
        kMinClusterCapability.str(), device.str());
  }
  return std::nullopt;
}

}  // namespace metrale
