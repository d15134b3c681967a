// ops/op_arg_fields.cpp: the check of an op's argument list against its declaration, run once
// when the declaration is built (never on a call's path).
#include "ops/op_arg_fields.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <string_view>

#include "ops/op_positions.hpp"

namespace metrale::ops {
namespace {

std::string_view read_as(ArgFieldKind kind) {
  switch (kind) {
    case ArgFieldKind::kPointer:
      return "a pointer";
    case ArgFieldKind::kScalar:
      return "a 32-bit scalar";
    case ArgFieldKind::kFlag:
      return "a 0/1 value";
    case ArgFieldKind::kNotHeld:
      break;
  }
  return "nothing";
}

bool agrees(const ArgDecl& arg, ArgFieldKind kind) {
  switch (kind) {
    case ArgFieldKind::kPointer:
      return arg.tensor();
    case ArgFieldKind::kScalar:
      return !arg.tensor();
    case ArgFieldKind::kFlag:
      return !arg.tensor() && arg.max == 1;
    case ArgFieldKind::kNotHeld:
      break;
  }
  return true;
}

}  // namespace

void require_arg_fields(const OpDeclaration& op, std::span<const ArgFieldKind> kinds) {
  require_arg_count(op, kinds.size());
  for (std::size_t at = 0; at < kinds.size(); ++at) {
    const ArgDecl& arg = op.args[at];
    if (!agrees(arg, kinds[at])) {
      throw std::logic_error(
          fmt::format("{}: the declaration's argument at position {} is '{}', a {}{}, but its call "
                      "reads {} there",
                      op.name, at, arg.name, arg.tensor() ? "tensor" : "scalar",
                      arg.tensor() ? "" : fmt::format(" in [{}, {}]", arg.min, arg.max), read_as(kinds[at])));
    }
  }
}

}  // namespace metrale::ops
