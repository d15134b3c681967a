// ops/op_positions.cpp: the declaration-order check behind the ops' by-position reads.
#include "ops/op_positions.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace metrale::ops {
namespace {

template <typename Entry, typename NameOf>
void require_order(std::string_view op, std::string_view what, const std::vector<Entry>& declared,
                   std::span<const std::string_view> expected, NameOf name_of) {
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const std::string_view actual = i < declared.size() ? std::string_view(name_of(declared[i])) : "(none)";
    if (actual != expected[i]) {
      throw std::logic_error(
          fmt::format("{}: the declaration's {} at position {} is '{}', but its call reads '{}' there", op, what, i,
                      actual, expected[i]));
    }
  }
}

}  // namespace

void require_declared_order(const OpDeclaration& op, std::span<const std::string_view> roles,
                            std::span<const std::string_view> levers) {
  require_order(op.name, "role", op.roles, roles, [](const RoleDecl& r) -> const std::string& { return r.role; });
  require_order(op.name, "lever", op.levers, levers,
                [](const LeverSpec& l) -> const std::string& { return l.toml_key; });
}

}  // namespace metrale::ops
