// ops/op_arg_fields.cpp: the check of an op's argument list against its declaration, run once
// when the declaration is built (never on a call's path).
#include "ops/op_arg_fields.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <string>
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

// A rule's stand-in as a declaration spells a zero_means ("k", "n/2"); "" for no rule.
std::string stand_in(const OpDeclaration& op, const ZeroMeansPlaces* rule) {
  if (rule == nullptr) {
    return {};
  }
  const std::string size = rule->size < op.args.size() ? op.args[rule->size].name : "?";
  return rule->divisor == 1 ? size : fmt::format("{}/{}", size, rule->divisor);
}

std::string said(const std::string& stand_in) {
  return stand_in.empty() ? std::string("nothing (0 is 0)") : fmt::format("'{}'", stand_in);
}

}  // namespace

void require_arg_fields(const OpDeclaration& op, std::span<const ArgFieldKind> kinds,
                        std::span<const ZeroMeansPlaces> zero_means) {
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
  for (std::size_t at = 0; at < op.args.size(); ++at) {
    const auto rule = std::find_if(zero_means.begin(), zero_means.end(),
                                   [&](const ZeroMeansPlaces& places) { return places.scalar == at; });
    const std::string read = stand_in(op, rule == zero_means.end() ? nullptr : &*rule);
    if (read != op.args[at].zero_means) {
      throw std::logic_error(fmt::format(
          "{}: the declaration's argument at position {} is '{}', whose 0 stands for {}, but its call reads 0 "
          "there as {}",
          op.name, at, op.args[at].name, said(op.args[at].zero_means), said(read)));
    }
  }
}

}  // namespace metrale::ops
