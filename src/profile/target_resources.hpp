// profile/target_resources.hpp: the registers and shared memory of every kernel a
// target ships, from ptxas's report when NVRTC compiles them for the target's arch (through a
// KernelRegistry, so the disk cache answers after the first time). What the profile's
// occupancy and wave size are computed from.
#pragma once

#include <map>
#include <string>

#include "jit/compile_report.hpp"
#include "metrale/target/hardware_target.hpp"

namespace metrale {

// Kernel name -> resources; kernels that did not compile (or no NVRTC, or generic's unknown
// arch) are absent. Never throws for a missing compiler: an absent entry is the answer.
std::map<std::string, KernelResources, std::less<>> target_kernel_resources(const HardwareTarget& target);

}  // namespace metrale
