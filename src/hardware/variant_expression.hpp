// hardware/variant_expression.hpp: the name expression of a variant declared through the
// registry's C ABI (and so Python's declare()), its placeholders filled as the library's own
// kernels' are (expand_kernel_expression).
// Invariant: only {block}, {lanes} and {groups} of a parameter the variant takes (not 0); any
// other placeholder is refused by name, never left in the expression NVRTC sees.
#pragma once

#include <string>
#include <string_view>

#include "metrale/target/hardware_target.hpp"

namespace metrale {

// `pattern` with its placeholders filled from `params`; ArgumentError naming the placeholder
// for an unknown one ({shape} is an op's shape constant) or one whose value is 0. Pure.
std::string expand_variant_expression(std::string_view pattern, const KernelParams& params);

}  // namespace metrale
