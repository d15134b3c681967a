// host/launch_limits.hpp: which launch shapes the host backend accepts. They are the
// CUDA limits every supported GPU shares, so a launch that runs here would also launch there;
// a cluster launch is checked against the compute capability the backend stands in for, with
// the CUDA backend's rule (gpu/cluster_launch.hpp), so it is refused here where CUDA would.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "metrale/gpu/compute_capability.hpp"
#include "metrale/gpu/launch_config.hpp"

namespace metrale::host {

inline constexpr std::uint32_t kMaxThreadsPerBlock = 1024;
inline constexpr std::uint32_t kMaxBlockDimZ = 64;
// The most dynamic shared memory a block may ask for (sm_90/sm_100 opt-in: 227 KiB).
inline constexpr std::uint32_t kMaxDynamicSharedBytes = kMaxOptInSharedBytes;
inline constexpr std::uint32_t kMaxGridDimX = 0x7fffffffU;
inline constexpr std::uint32_t kMaxGridDimYZ = 65535;

// Why `config` cannot launch on the host backend standing in for a device of capability
// `device`, or nullopt. Pure.
std::optional<std::string> launch_config_problem(const LaunchConfig& config, ComputeCapability device);

}  // namespace metrale::host
