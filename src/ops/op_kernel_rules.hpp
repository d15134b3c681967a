// ops/op_kernel_rules.hpp: what the library's kernels' parameter rules (KernelDeclaration::rule,
// each op's in its folder's <op>.cpp) share: the problem they return and the largest block.
// Pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "metrale/target/hardware_target.hpp"

namespace metrale::ops {

inline constexpr std::uint32_t kMaxBlock = 1024;

// The rule's verdict on one parameter: its name and the sentence that says what it must be.
inline std::optional<KernelParamsProblem> problem(std::string_view param, std::string reason) {
  return KernelParamsProblem{param, std::move(reason)};
}

}  // namespace metrale::ops
