// profile/shape_variants.hpp: which shape-specialised variants the profile prices beside the
// generic ones: the op declaration's shape constants (ops::ShapeConstantDecl) at the profiled
// shape, each value put to its rule. Read off the declaration alone, so any op that declares a
// shape constant is priced both ways without the profile naming it.
// Invariants: pure; one entry per shape constant whose role's kernel the target ships (in the
// declaration's order), its `shape` the rule's answer, or 0 with the rule's reason, or 0 with
// kNoProfileValue when the profile's shape has no value for the constant's argument.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "metrale/ops/op_declaration.hpp"
#include "metrale/target/hardware_target.hpp"
#include "profile/op_profile.hpp"

namespace metrale {

// The refusal of a constant whose argument the profile's shape does not set.
inline constexpr std::string_view kNoProfileValue = "the profile's shape sets no value for this argument";

// The value the profile's shape gives the op argument `arg` (m, n, k, vheads_per_group; n only
// when the op's shape has an N); nullopt for any other.
std::optional<std::uint64_t> profile_shape_value(const ProfileShape& shape, bool has_n, std::string_view arg);

std::vector<ProfiledShapeConstant> profile_shape_constants(const HardwareTarget& target, const ops::OpDeclaration& op,
                                                           const ProfileShape& shape, bool has_n);

// "note: ssm_ba_gates_mma at n = 144 stays generic (no specialised row): N > 128 ..." for a
// refused constant; "" for one the rule accepted.
std::string shape_constant_note(const ProfiledShapeConstant& constant);

}  // namespace metrale
