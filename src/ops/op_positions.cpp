// ops/op_positions.cpp: the declaration-order check behind the ops' by-position reads.
#include "ops/op_positions.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace metrale::ops {
namespace {

template <typename Entry, typename NameOf>
void require_at(std::string_view op, std::string_view what, const std::vector<Entry>& declared, std::size_t at,
                std::string_view expected, NameOf name_of) {
  const std::string_view actual = at < declared.size() ? std::string_view(name_of(declared[at])) : "(none)";
  if (actual != expected) {
    throw std::logic_error(fmt::format("{}: the declaration's {} at position {} is '{}', but its call reads '{}' there",
                                       op, what, at, actual, expected));
  }
}

const std::string& role_name(const RoleDecl& role) { return role.role; }
const std::string& lever_name(const LeverSpec& lever) { return lever.toml_key; }
const std::string& arg_name(const ArgDecl& arg) { return arg.name; }

}  // namespace

void require_role_at(const OpDeclaration& op, std::size_t at, std::string_view role) {
  require_at(op.name, "role", op.roles, at, role, role_name);
}

void require_lever_at(const OpDeclaration& op, std::size_t at, std::string_view lever) {
  require_at(op.name, "lever", op.levers, at, lever, lever_name);
}

void require_arg_at(const OpDeclaration& op, std::size_t at, std::string_view arg) {
  require_at(op.name, "argument", op.args, at, arg, arg_name);
}

void require_arg_count(const OpDeclaration& op, std::size_t count) {
  if (op.args.size() != count) {
    throw std::logic_error(
        fmt::format("{}: the declaration has {} arguments, but its call reads {}", op.name, op.args.size(), count));
  }
}

void require_declared_order(const OpDeclaration& op, std::span<const std::string_view> roles,
                            std::span<const std::string_view> levers) {
  for (std::size_t i = 0; i < roles.size(); ++i) {
    require_role_at(op, i, roles[i]);
  }
  for (std::size_t i = 0; i < levers.size(); ++i) {
    require_lever_at(op, i, levers[i]);
  }
}

}  // namespace metrale::ops
