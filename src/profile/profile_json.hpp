// profile/profile_json.hpp: one profile row as JSON (`metrale-jit profile --json`'s array).
// Invariants: every row carries the op, kernel, role, parameters and shape (m, n, k) so a device
// run's measured rows can be joined on them (its bench_key, spelled as metrale-ops-bench spells its
// rows); "variant" is "generic" or "specialised" (params.shape != 0, its template argument in
// "shape", null on a generic row); "shape_constant" is the kernel's shape constant at this shape
// (arg, value, shape, reason: why the value stays generic, null when it does not), null when the
// kernel has none.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "profile/op_profile.hpp"

namespace metrale {

nlohmann::json shape_constant_json(const ProfiledShapeConstant& constant);
nlohmann::json profile_row_json(const KernelProfile& row, std::string_view target);

}  // namespace metrale
