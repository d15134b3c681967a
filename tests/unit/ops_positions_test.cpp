// The by-position reads of the library ops' per-call paths (ops/op_positions.hpp): every library
// declaration builds (each checks its own positions when built), and a declaration whose roles or
// levers are out of the order its call reads them in is refused when built, naming the op, the
// position and both names.
#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <stdexcept>
#include <string>
#include <string_view>

#include "ops/core/library_ops.hpp"
#include "ops/op_positions.hpp"

using namespace metrale;

namespace {

std::string logic_error_of(const ops::OpDeclaration& op, std::span<const std::string_view> roles,
                           std::span<const std::string_view> levers) {
  try {
    ops::require_declared_order(op, roles, levers);
  } catch (const std::logic_error& error) {
    return error.what();
  }
  return "";
}

ops::OpDeclaration declaration_named(std::string_view name) {
  for (const ops::LibraryOp& entry : ops::library_op_list()) {
    ops::OpDeclaration op = entry.declaration();
    if (op.name == name) {
      return op;
    }
  }
  FAIL("no library op " << name);
  return {};
}

}  // namespace

TEST_CASE("every library op's declaration holds the positions its call reads", "[ops][positions]") {
  std::size_t built = 0;
  for (const ops::LibraryOp& entry : ops::library_op_list()) {
    const ops::OpDeclaration op = entry.declaration();  // throws std::logic_error when out of order
    CHECK_FALSE(op.roles.empty());
    ++built;
  }
  CHECK(built >= 4);
}

TEST_CASE("a declaration out of its call's order is refused by position and name", "[ops][positions]") {
  ops::OpDeclaration op = declaration_named("ssm_ba_gates");
  constexpr std::array<std::string_view, 4> kRoles = {"parent", "twin", "tensor_core", "decode"};
  constexpr std::array<std::string_view, 3> kLevers = {"ssm_ba_gates_hopper", "ssm_ba_gates_tensor_core",
                                                       "ssm_ba_gates_decode"};
  REQUIRE(logic_error_of(op, kRoles, kLevers).empty());

  SECTION("two roles swapped") {
    std::swap(op.roles[2], op.roles[3]);
    CHECK(logic_error_of(op, kRoles, kLevers) ==
          "ssm_ba_gates: the declaration's role at position 2 is 'decode', but its call reads 'tensor_core' there");
  }
  SECTION("a lever moved") {
    std::rotate(op.levers.begin(), op.levers.begin() + 1, op.levers.end());
    CHECK(logic_error_of(op, kRoles, kLevers) ==
          "ssm_ba_gates: the declaration's lever at position 0 is 'ssm_ba_gates_tensor_core', but its call reads "
          "'ssm_ba_gates_hopper' there");
  }
  SECTION("a role the call reads is missing") {
    op.roles.pop_back();
    CHECK(logic_error_of(op, kRoles, kLevers) ==
          "ssm_ba_gates: the declaration's role at position 3 is '(none)', but its call reads 'decode' there");
  }
}
