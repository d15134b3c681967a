// metrale/gpu/launch_config.hpp: grid and block dimensions of one launch, as plain values.
// Invariant: plain data; what a backend accepts is decided by its checks (src/gpu/cluster_launch.hpp
// for clusters, src/host/launch_limits.hpp for the host's shape limits), never here.
#pragma once

#include <cstdint>
#include <string>

namespace metrale {

struct Dim3 {
  std::uint32_t x = 1;
  std::uint32_t y = 1;
  std::uint32_t z = 1;

  [[nodiscard]] constexpr std::uint64_t volume() const { return static_cast<std::uint64_t>(x) * y * z; }
  friend constexpr bool operator==(const Dim3&, const Dim3&) = default;
};

// The portable cluster size: what every sm_90+ device launches without a non-portable opt-in.
inline constexpr std::uint32_t kMaxClusterBlocks = 8;

struct LaunchConfig {
  Dim3 grid;
  Dim3 block;
  std::uint32_t dynamic_shared_bytes = 0;
  // A CUstream on the CUDA backend (0 = the default stream); ignored on the host backend.
  std::uint64_t stream = 0;
  // Thread blocks per cluster along grid.x (sm_90+ distributed shared memory); 1 = no cluster.
  // grid.x must be a multiple of it; at most kMaxClusterBlocks.
  std::uint32_t cluster_blocks = 1;
};

std::string to_string(const Dim3& dims);

}  // namespace metrale
