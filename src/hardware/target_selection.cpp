// target_selection.cpp: matching a device's compute capability to a target.
#include "hardware/target_selection.hpp"

#include <algorithm>

#include "metrale/error.hpp"

namespace metrale {

HardwareTarget select_target(std::span<const HardwareTarget> targets, ComputeCapability device) {
  const HardwareTarget* generic = nullptr;
  for (const auto& target : targets) {
    if (target.compute_capability == device) {
      return target;
    }
    if (!target.compute_capability && generic == nullptr) {
      generic = &target;
    }
  }
  if (generic == nullptr) {
    throw ConfigError("no target serves compute capability " + device.str() +
                      " and there is no generic target (compute_capability = \"any\")");
  }
  HardwareTarget chosen = *generic;
  chosen.arch = device.sm_arch();
  return chosen;
}

const HardwareTarget* find_target(std::span<const HardwareTarget> targets, std::string_view name) {
  auto it = std::find_if(targets.begin(), targets.end(), [&](const HardwareTarget& t) { return t.name == name; });
  return it == targets.end() ? nullptr : &*it;
}

}  // namespace metrale
