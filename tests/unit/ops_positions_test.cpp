// The by-position reads of the library ops' per-call paths (ops/op_positions.hpp): every library
// declaration builds (each checks its own positions when built), and a declaration whose roles or
// levers are out of the order its call reads them in is refused when built, naming the op, the
// position and both names; a twin-over-parent declaration (ops/op_twin_call.hpp) holds what it was
// given at the positions its names state, or is refused the same way.
#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <stdexcept>
#include <string>
#include <string_view>

#include "ops/core/library_ops.hpp"
#include "ops/op_positions.hpp"
#include "ops/op_twin_call.hpp"

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

TEST_CASE("a twin-over-parent declaration holds its roles, guard and lever where its names say", "[ops][positions]") {
  constexpr ops::TwinOverParent kNames{
      .op = "planted_op", .parent_kernel = "planted_parent", .twin_kernel = "planted_twin", .twin_lever = "planted_on"};
  const auto roles = [] {
    return ops::TwinOverParentRoles{.parent_aliases = {"slow"},
                                    .parent_doc = "the parent",
                                    .twin_doc = "the twin",
                                    .twin_reasons = {"too small", "not built"},
                                    .tuned_reason = "too small",
                                    .lever_env = "PLANTED_ON",
                                    .lever_doc = "asks for the twin"};
  };
  ops::OpDeclaration op;
  ops::declare_twin_over_parent(op, kNames, roles());
  CHECK(op.name == "planted_op");
  REQUIRE(op.roles.size() == 2);
  CHECK(op.roles[0].role == "parent");
  CHECK(op.roles[0].kernel == "planted_parent");
  CHECK(op.roles[0].aliases == std::vector<std::string>{"slow"});
  CHECK(op.roles[0].lever.empty());
  CHECK(op.roles[1].role == "twin");
  CHECK(op.roles[1].kernel == "planted_twin");
  CHECK(op.roles[1].lever == "planted_on");
  REQUIRE(op.guards.size() == 1);
  CHECK(op.guards[0].role == "twin");
  CHECK(op.guards[0].reasons == std::vector<std::string>{"too small", "not built"});
  CHECK(op.guards[0].tuned_reason == "too small");
  REQUIRE(op.levers.size() == 1);
  CHECK(op.levers[0].toml_key == "planted_on");
  CHECK(op.levers[0].environment_variable() == "PLANTED_ON");
  CHECK_FALSE(op.levers[0].required_in_file);

  SECTION("a role between them moves the twin to where the names must say") {
    ops::TwinOverParentRoles with_step = roles();
    with_step.between = {ops::RoleDecl{"step", "planted_step", {}, "", ""}};
    ops::OpDeclaration stepped;
    try {
      ops::declare_twin_over_parent(stepped, kNames, with_step);
      FAIL("a twin declared at position 2 was taken for position 1");
    } catch (const std::logic_error& error) {
      CHECK(std::string(error.what()) ==
            "planted_op: the declaration's role at position 1 is 'step', but its call reads 'twin' there");
    }
    ops::TwinOverParent moved = kNames;
    moved.twin_at = 2;
    ops::declare_twin_over_parent(stepped, moved, with_step);
    REQUIRE(stepped.roles.size() == 3);
    CHECK(stepped.roles[1].role == "step");
    CHECK(stepped.roles[2].role == "twin");
  }
}
