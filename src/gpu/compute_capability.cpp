// compute_capability.cpp: formatting and strict parsing of "major.minor".
#include "metrale/gpu/compute_capability.hpp"

#include <fmt/format.h>

#include <charconv>

#include "metrale/gpu/launch_config.hpp"

namespace metrale {

std::string ComputeCapability::str() const { return fmt::format("{}.{}", major, minor); }

std::string ComputeCapability::sm_arch() const { return fmt::format("sm_{}{}", major, minor); }

std::uint32_t opt_in_shared_bytes(ComputeCapability cc) {
  constexpr std::uint32_t kKiB = 1024;
  if (cc == ComputeCapability{8, 0} || cc == ComputeCapability{8, 7}) {
    return 163 * kKiB;
  }
  if (cc == ComputeCapability{8, 6} || cc == ComputeCapability{8, 9} || cc.major == 12) {
    return 99 * kKiB;
  }
  if (cc.major >= 9 && cc.major <= 11) {
    return kMaxOptInSharedBytes;
  }
  return kDefaultSharedBytes;
}

std::optional<ComputeCapability> parse_compute_capability(std::string_view text) {
  const auto dot = text.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 >= text.size()) {
    return std::nullopt;
  }
  auto parse_part = [](std::string_view part, int& out) {
    if (part.size() > 3) {
      return false;
    }
    for (char c : part) {
      if (c < '0' || c > '9') {
        return false;
      }
    }
    const auto* end = part.data() + part.size();
    auto [ptr, ec] = std::from_chars(part.data(), end, out);
    return ec == std::errc{} && ptr == end;
  };
  ComputeCapability cc;
  if (!parse_part(text.substr(0, dot), cc.major) || !parse_part(text.substr(dot + 1), cc.minor)) {
    return std::nullopt;
  }
  if (cc.major == 0) {
    return std::nullopt;
  }
  return cc;
}

std::string to_string(const Dim3& dims) { return fmt::format("({},{},{})", dims.x, dims.y, dims.z); }

}  // namespace metrale
