// metrale/gpu/compute_capability.hpp: a device's compute capability (major.minor).
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace metrale {

struct ComputeCapability {
  int major = 0;
  int minor = 0;

  friend constexpr auto operator<=>(const ComputeCapability&, const ComputeCapability&) = default;

  // "9.0"
  [[nodiscard]] std::string str() const;
  // "sm_90", "sm_121": the NVRTC --gpu-architecture spelling for a real SM.
  [[nodiscard]] std::string sm_arch() const;
};

// The dynamic shared memory every device grants a block without opting in, and the most any
// device lets a block opt in to (sm_90 and sm_100: 227 KiB).
inline constexpr std::uint32_t kDefaultSharedBytes = 48U * 1024U;
inline constexpr std::uint32_t kMaxOptInSharedBytes = 227U * 1024U;

// Thread-block clusters (%cluster_ctarank, barrier.cluster, mapa) need sm_90.
inline constexpr ComputeCapability kMinClusterCapability{9, 0};

// The dynamic shared memory one block may opt in to on a device of capability `cc` (CUDA
// Programming Guide, per-capability limits): 163 KiB on 8.0 and 8.7, 227 KiB on 9.x, 10.x and
// 11.x, 99 KiB on 8.6, 8.9 and 12.x, 48 KiB (what every device grants without opting in) for
// anything else. For when no device can be asked (a target's explain). Pure.
std::uint32_t opt_in_shared_bytes(ComputeCapability cc);

// Parses "9.0" or "12.1" (digits, one dot, digits); nullopt for anything else. Pure.
std::optional<ComputeCapability> parse_compute_capability(std::string_view text);

}  // namespace metrale
