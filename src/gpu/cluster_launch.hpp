// gpu/cluster_launch.hpp: which thread-block cluster launches (LaunchConfig::cluster_blocks) a
// device accepts, one named reason each. The CUDA backend checks it before the driver call, and
// the host backend against its configured compute capability, so a guard tested on the host sees
// the refusal CUDA would give.
// Invariants: pure; a launch without a cluster (cluster_blocks 1) is never refused here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "metrale/gpu/compute_capability.hpp"
#include "metrale/gpu/launch_config.hpp"

namespace metrale {

// The limits it applies: kMaxClusterBlocks (metrale/gpu/launch_config.hpp) and
// kMinClusterCapability (metrale/gpu/compute_capability.hpp).
// Why `config`'s cluster cannot launch on a device of capability `device`, or nullopt.
std::optional<std::string> cluster_launch_problem(const LaunchConfig& config, ComputeCapability device);

}  // namespace metrale
