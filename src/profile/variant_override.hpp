// profile/variant_override.hpp: `--variant KERNEL:block=..,lanes=..,groups=..` for the profile:
// a kernel variant the target does not ship, priced as if it did. Parsing is pure; applying one
// gives a copy of the target whose entry for that kernel carries the variant's parameters, so
// everything that reads the target (the ptxas registers, the profiled launch) sees the variant.
// Invariants: a parameter the spec leaves out keeps the target's value (0 when the target ships
// no such kernel); the result obeys the kernel catalog's rules, or an ArgumentError names the
// spec, the kernel and the parameter (as HARDWARE.toml's errors name the key); one override per
// kernel.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "metrale/gpu/kernel_params.hpp"
#include "metrale/target/hardware_target.hpp"
#include "profile/op_profile.hpp"

namespace metrale {

struct VariantOverride {
  std::string spec;    // as given, for error messages
  std::string kernel;  // "ssm_ba_gates_mma"
  // The parameters the spec names; the others come from the target.
  std::optional<std::uint32_t> block;
  std::optional<std::uint32_t> lanes;
  std::optional<std::uint32_t> groups;
};

// "ssm_ba_gates_mma:block=256,lanes=128,groups=6". ArgumentError for a missing kernel or ':',
// an unknown or repeated key, or a value that is not a positive integer. Pure.
VariantOverride parse_variant_override(std::string_view spec);

// `target` with every override applied (an entry added when the target ships none of that
// kernel). ArgumentError when a kernel is not one of `op`'s, is overridden twice, or its
// parameters break the catalog's rules. Pure.
HardwareTarget with_variant_overrides(const HardwareTarget& target, const ops::OpDeclaration& op,
                                      std::span<const VariantOverride> overrides);

}  // namespace metrale
