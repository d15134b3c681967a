// capi_pick.hpp (private): the one translation of an op's pick into the C ABI's metrale_pick,
// shared by the ops (what ran) and explain (what would run), so the two cannot disagree.
// Invariant: the strings are interned (static until the process ends).
#pragma once

#include <optional>
#include <string_view>

#include "metrale/metrale.h"
#include "metrale/ops/ssm_ba_gates.hpp"

namespace metrale::capi {

// A pick of `kernel` (twin or not) with the twin guard's reason; no tensor-core verdict.
metrale_pick to_pick(std::string_view kernel, bool twin, const std::optional<std::string_view>& reason);
// The BA-gates pick: the tensor-core kernel, the twin or the parent, with both guards' reasons.
metrale_pick ba_gates_pick_of(const ops::BaGatesPick& pick);

}  // namespace metrale::capi
