// ops/core/op_arg_binding.hpp: the check every entry with values in declaration order shares.
#pragma once

#include <cstddef>

#include "metrale/ops/op_declaration.hpp"

namespace metrale::ops {

// ArgumentError "<op>: N argument values for M declared arguments" unless `count` is the op's.
void check_value_count(const OpDeclaration& op, std::size_t count);

}  // namespace metrale::ops
