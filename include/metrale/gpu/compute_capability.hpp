// metrale/gpu/compute_capability.hpp: a device's compute capability (major.minor).
#pragma once

#include <compare>
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

// Parses "9.0" or "12.1" (digits, one dot, digits); nullopt for anything else. Pure.
std::optional<ComputeCapability> parse_compute_capability(std::string_view text);

}  // namespace metrale
