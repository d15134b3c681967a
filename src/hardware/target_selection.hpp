// hardware/target_selection.hpp: which target serves a device.
// Invariant: exactly the target whose compute capability equals the device's, else the
// generic one completed with the device's sm_XY; selection is by data, never by name.
#pragma once

#include <span>
#include <string_view>

#include "metrale/gpu/compute_capability.hpp"
#include "metrale/target/hardware_target.hpp"

namespace metrale {

// The target of a runtime with no device or on the host backend, and of the CLI's build, when
// none is named: the seeds' own device.
inline constexpr std::string_view kDefaultTarget = "hopper";

// Throws ConfigError when no target matches and there is no generic target. Pure.
HardwareTarget select_target(std::span<const HardwareTarget> targets, ComputeCapability device);

// The target called `name`, or nullptr. Pure.
const HardwareTarget* find_target(std::span<const HardwareTarget> targets, std::string_view name);

}  // namespace metrale
