// ops/op_positions.hpp: a library op's per-call path reads its kernels and levers by their
// positions in its declaration (OpContext::kernels and ::levers follow op.roles and op.levers)
// instead of by name: a name lookup costs ~100 instructions a call, on every call.
// Invariant: an op whose call reads by position states its positions' names once and checks them
// with require_declared_order when its declaration is built (at start-up, and in every test that
// lists the ops), so a reordered declaration fails there, never as a wrong kernel at a call.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

#include "metrale/ops/op_declaration.hpp"

namespace metrale::ops {

// std::logic_error naming the op, the position and both names unless op.roles[at].role is `role`
// (op.levers[at].toml_key is `lever`).
void require_role_at(const OpDeclaration& op, std::size_t at, std::string_view role);
void require_lever_at(const OpDeclaration& op, std::size_t at, std::string_view lever);
void require_arg_at(const OpDeclaration& op, std::size_t at, std::string_view arg);

// std::logic_error naming the op and both counts unless it declares exactly `count` arguments (the
// count of the ArgFields its call reads them through, op_arg_fields.hpp).
void require_arg_count(const OpDeclaration& op, std::size_t count);

// The same, unless op.roles[i].role is
// roles[i] and op.levers[i].toml_key is levers[i] for every i given (a declaration may have more).
void require_declared_order(const OpDeclaration& op, std::span<const std::string_view> roles,
                            std::span<const std::string_view> levers);

// The lever at declaration position `at`: false when the runtime does not know it (as
// OpContext::lever). Inline: it is on every call's path.
inline bool lever_at(const OpContext& context, std::size_t at) {
  const LeverValue* value = context.levers[at];
  return value != nullptr && value->value;
}

}  // namespace metrale::ops
