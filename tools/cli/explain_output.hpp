// explain_output.hpp: `metrale-jit explain`'s JSON and text, derived from any op's
// ops::Explanation. The primary role is "twin" (else the last guarded role, the one nearest the
// parent): its verdict is the top-level "twin", "reject", "requested" and "lever" (without --m:
// "twin_kernel", "min_m", "reject"). Every other guarded role is an object named after the role
// with "runs", "reject", "requested", "lever" and its details as keys (without --m: the keys
// "<role>_kernel", "<role>_min_m" and "<role>_reject"). These are the keys the CLI had before ops
// were data (tests/cli/explain_agreement.cpp and tests/cmake/cli.cmake pin them).
#pragma once

#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>

#include "metrale/ops/op_declaration.hpp"
#include "metrale/runtime.hpp"

namespace metrale::cli {

// `op` is the name the user typed (an alias stays an alias in the output). `shapes`: the op's
// shape constants at this shape (Runtime::shape_variants); JSON "shapes" (an array of role,
// kernel, arg, value, params, specialised, pinned, reason) and one text line each.
nlohmann::json explain_json(const ops::Explanation& explanation, std::string_view op,
                            std::span<const ShapeVariantState> shapes = {});
std::string explain_text(const ops::Explanation& explanation, std::string_view op,
                         std::span<const ShapeVariantState> shapes = {});

}  // namespace metrale::cli
