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

// The portable cluster size: what every sm_90+ device launches without a non-portable opt-in.
inline constexpr std::uint32_t kMaxClusterBlocks = 8;
// Clusters (and %cluster_ctarank, barrier.cluster, mapa) need sm_90.
inline constexpr ComputeCapability kMinClusterCapability{9, 0};

// Why `config`'s cluster cannot launch on a device of capability `device`, or nullopt.
std::optional<std::string> cluster_launch_problem(const LaunchConfig& config, ComputeCapability device);

}  // namespace metrale
