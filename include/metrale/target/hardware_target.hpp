// metrale/target/hardware_target.hpp: one target as read from its HARDWARE.toml.
// Invariants (established by the loader): kernels are sorted by name and each passes the
// kernel catalog's constraints; compute_capability is nullopt only for the generic target,
// whose arch stays empty and sm_count nullopt until select_target fills them from the device.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "metrale/gpu/compute_capability.hpp"
#include "metrale/gpu/kernel_params.hpp"

namespace metrale {

struct KernelEntry {
  std::string name;
  KernelParams params;
};

struct HardwareTarget {
  std::string name;
  // nullopt = generic: serves any device no other target claims.
  std::optional<ComputeCapability> compute_capability;
  // "sm_90"; for generic empty until select_target fills in the device's.
  std::string arch;
  // nullopt = taken from the device.
  std::optional<std::uint32_t> sm_count;
  // Sorted by name.
  std::vector<KernelEntry> kernels;
  // The [defaults] levers, by TOML key.
  std::map<std::string, bool, std::less<>> defaults;
  // "hardware/hopper/HARDWARE.toml" or "<embedded>/hopper/HARDWARE.toml".
  std::string source;

  // The shipped kernel of that name, or nullptr when this target does not ship it.
  [[nodiscard]] const KernelEntry* find_kernel(std::string_view kernel_name) const;
};

}  // namespace metrale
