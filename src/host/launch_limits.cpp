// host/launch_limits.cpp: the launch-shape checks, one named reason each.
#include "host/launch_limits.hpp"

#include <fmt/format.h>

#include "gpu/cluster_launch.hpp"

namespace metrale::host {

std::optional<std::string> launch_config_problem(const LaunchConfig& config, ComputeCapability device) {
  const Dim3& grid = config.grid;
  const Dim3& block = config.block;
  if (grid.volume() == 0 || block.volume() == 0) {
    return fmt::format("empty launch: grid {} block {}", to_string(grid), to_string(block));
  }
  if (block.volume() > kMaxThreadsPerBlock || block.x > kMaxThreadsPerBlock || block.y > kMaxThreadsPerBlock ||
      block.z > kMaxBlockDimZ) {
    return fmt::format("block {} exceeds the limits (at most {} threads, z at most {})", to_string(block),
                       kMaxThreadsPerBlock, kMaxBlockDimZ);
  }
  if (grid.x > kMaxGridDimX || grid.y > kMaxGridDimYZ || grid.z > kMaxGridDimYZ) {
    return fmt::format("grid {} exceeds the limits (x at most {}, y and z at most {})", to_string(grid), kMaxGridDimX,
                       kMaxGridDimYZ);
  }
  if (config.dynamic_shared_bytes > kMaxDynamicSharedBytes) {
    return fmt::format(
        "{} bytes of dynamic shared memory requested; a block may have at most {} (227 KiB, the "
        "opt-in limit of sm_90 and sm_100)",
        config.dynamic_shared_bytes, kMaxDynamicSharedBytes);
  }
  return cluster_launch_problem(config, device);
}

}  // namespace metrale::host
