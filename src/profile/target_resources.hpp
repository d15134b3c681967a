// profile/target_resources.hpp: the registers and shared memory of every kernel a
// target ships, from ptxas's report when NVRTC compiles them for the target's arch (through a
// KernelRegistry, so the disk cache answers after the first time). What the profile's
// occupancy and wave size are computed from.
#pragma once

#include <map>
#include <span>
#include <string>

#include "jit/compile_report.hpp"
#include "metrale/target/hardware_target.hpp"
#include "profile/op_profile.hpp"

namespace metrale {

// Kernel name -> resources; kernels that did not compile (or no NVRTC, or generic's unknown
// arch) are absent. Never throws for a missing compiler: an absent entry is the answer.
std::map<std::string, KernelResources, std::less<>> target_kernel_resources(const HardwareTarget& target);

// The same for the specialised variants of the constants the rule accepted (shape != 0): the
// kernel at the target's parameters with `shape` set, each in an NVRTC program of its own, so
// its registers are its own and not the generic's. Kernel name -> resources.
std::map<std::string, KernelResources, std::less<>> shape_variant_resources(
    const HardwareTarget& target, std::span<const ProfiledShapeConstant> constants);

}  // namespace metrale
