// op_verdict.cpp: the CTA floor, the SM count a guard sees, and a verdict's log slot.
#include "ops/op_verdict.hpp"

#include <algorithm>
#include <limits>

namespace metrale::ops {

std::uint32_t min_ctas(std::uint32_t sm_count) {
  const std::uint64_t ctas = std::uint64_t{kMinCtasPerSm} * std::max<std::uint32_t>(sm_count, 1);
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(ctas, std::numeric_limits<std::uint32_t>::max()));
}

std::uint32_t device_sm_count(const GpuBackend& gpu, std::uint32_t fallback) {
  return std::max<std::uint32_t>(gpu.sm_count().value_or(fallback), 1);
}

std::optional<OpLogSlot> op_log_slot(std::optional<std::string_view> reject, bool requested,
                                     std::span<const std::string_view> rejects) {
  if (!reject) {
    return OpLogSlot{true, 0};
  }
  if (!requested) {
    return std::nullopt;
  }
  const auto found = std::find(rejects.begin(), rejects.end(), *reject);
  if (found == rejects.end()) {
    return std::nullopt;
  }
  return OpLogSlot{false, static_cast<std::size_t>(found - rejects.begin())};
}

}  // namespace metrale::ops
