// ops_expression_test.cpp: the expression language of ops declared as data (src/ops/op_expression.hpp)
// against an independent reference: C++'s own arithmetic over random values; precedence,
// short-circuit, the named faults (division by zero, overflow), and refusals at compile naming the
// expression and the column, or the unknown name.
#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "metrale/error.hpp"
#include "ops/op_expression.hpp"

using metrale::ops::Expr;
using metrale::ops::ExprFault;
using metrale::ops::ExprNames;

namespace {

ExprNames abc() {
  ExprNames names;
  names.add("a");
  names.add("b");
  names.add("c");
  names.add("twin.groups");
  return names;
}

std::int64_t eval(const std::string& text, std::vector<std::int64_t> slots) {
  const ExprNames names = abc();
  const auto result = Expr::compile(text, names, "test").evaluate(slots);
  REQUIRE(result.ok());
  return result.value;
}

ExprFault fault_of(const std::string& text, std::vector<std::int64_t> slots) {
  const ExprNames names = abc();
  return Expr::compile(text, names, "test").evaluate(slots).fault;
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return a / b + ((a % b != 0 && ((a < 0) == (b < 0))) ? 1 : 0); }

}  // namespace

TEST_CASE("expressions compute what C++ computes over random values", "[ops][expr]") {
  std::mt19937_64 rng(0x5eed);
  std::uniform_int_distribution<std::int64_t> value(-100000, 100000);
  const ExprNames names = abc();
  const Expr sum = Expr::compile("a + b * c - (a - b) / (c * c + 1) % 7", names, "t");
  const Expr logic = Expr::compile("a < b && b <= c || !(a == c) && a != 0", names, "t");
  const Expr pick = Expr::compile("a > b ? min(a, c) : max(b, c) + ceil_div(a, c * c + 1)", names, "t");
  const Expr compare = Expr::compile("(a >= b) + (a > b) * 2 + (a <= c) * 4", names, "t");
  for (int i = 0; i < 2000; ++i) {
    const std::int64_t a = value(rng);
    const std::int64_t b = value(rng);
    const std::int64_t c = value(rng);
    const std::vector<std::int64_t> slots = {a, b, c, 8};
    CHECK(sum.evaluate(slots).value == a + b * c - (a - b) / (c * c + 1) % 7);
    CHECK(logic.evaluate(slots).value == ((a < b && b <= c) || (!(a == c) && a != 0) ? 1 : 0));
    CHECK(pick.evaluate(slots).value == (a > b ? std::min(a, c) : std::max(b, c) + ceil_div(a, c * c + 1)));
    CHECK(compare.evaluate(slots).value == (a >= b) + (a > b) * 2 + (a <= c) * 4);
  }
}

TEST_CASE("expressions: precedence, unary minus, dotted names and ceil_div's rounding", "[ops][expr]") {
  CHECK(eval("1 + 2 * 3", {}) == 7);
  CHECK(eval("(1 + 2) * 3", {}) == 9);
  CHECK(eval("-a - -b", {5, 7, 0, 0}) == 2);
  CHECK(eval("10 - 4 - 3", {}) == 3);  // left to right
  CHECK(eval("7 / 2 * 2", {}) == 6);
  CHECK(eval("-7 / 2", {}) == -3);  // truncation, as C
  CHECK(eval("-7 % 3", {}) == -1);
  CHECK(eval("ceil_div(a, b)", {9, 8, 0, 0}) == 2);
  CHECK(eval("ceil_div(a, b)", {8, 8, 0, 0}) == 1);
  CHECK(eval("ceil_div(a, b)", {-9, 8, 0, 0}) == -1);
}

TEST_CASE("expressions: && || and ?: evaluate only the side they need", "[ops][expr]") {
  // The untaken side would divide by zero.
  CHECK(eval("b == 0 || a / b > 1", {4, 0, 0, 0}) == 1);
  CHECK(eval("b != 0 && a / b > 1", {4, 0, 0, 0}) == 0);
  CHECK(eval("b == 0 ? 5 : a / b", {4, 0, 0, 0}) == 5);
  CHECK(eval("b == 0 ? a / b : 6", {4, 1, 0, 0}) == 6);
  CHECK(eval("a && b", {3, 9, 0, 0}) == 1);  // logic gives 0 or 1
  CHECK(eval("a || b", {0, 9, 0, 0}) == 1);
  CHECK(eval("a ? b ? 1 : 2 : 3", {1, 0, 0, 0}) == 2);  // right-associative
  CHECK(eval("twin.groups * 2", {0, 0, 0, 8}) == 16);
}

TEST_CASE("expressions name division by zero and overflow instead of wrapping", "[ops][expr]") {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  CHECK(fault_of("a / b", {1, 0, 0, 0}) == ExprFault::kDivisionByZero);
  CHECK(fault_of("a % b", {1, 0, 0, 0}) == ExprFault::kDivisionByZero);
  CHECK(fault_of("ceil_div(a, b)", {1, 0, 0, 0}) == ExprFault::kDivisionByZero);
  CHECK(fault_of("a + b", {kMax, 1, 0, 0}) == ExprFault::kOverflow);
  CHECK(fault_of("a - b", {kMin, 1, 0, 0}) == ExprFault::kOverflow);
  CHECK(fault_of("a * b", {kMax / 2 + 1, 2, 0, 0}) == ExprFault::kOverflow);
  CHECK(fault_of("-a", {kMin, 0, 0, 0}) == ExprFault::kOverflow);
  CHECK(fault_of("a / b", {kMin, -1, 0, 0}) == ExprFault::kOverflow);
  CHECK(fault_of("a * b", {kMax / 2, 2, 0, 0}) == ExprFault::kNone);
  CHECK(std::string(metrale::ops::to_string(ExprFault::kDivisionByZero)) == "division by zero");
}

TEST_CASE("expressions are refused at compile naming the expression, the column or the name", "[ops][expr]") {
  const ExprNames names = abc();
  const auto refused = [&](const std::string& text, const std::string& needle) {
    INFO(text);
    REQUIRE_THROWS_AS(Expr::compile(text, names, "op spec 'x': role 'twin': guard rule 1"), metrale::ArgumentError);
    REQUIRE_THROWS_WITH(Expr::compile(text, names, "op spec 'x': role 'twin': guard rule 1"), Catch::Contains(needle));
  };
  refused("a + m", "unknown name 'm' (known: a, b, c, twin.groups)");
  refused("a + m", "expression 'a + m': column 5");
  refused("a + m", "op spec 'x': role 'twin': guard rule 1");
  refused("a +", "column 4: expected a number, a name or '(' at the end");
  refused("(a + b", "expected ')' at the end");
  refused("a b", "column 3: unexpected 'b' after the expression");
  refused("a = b", "unexpected '='");
  refused("a ? b", "expected ':'");
  refused("pow(a, b)", "unknown function 'pow' (known: min, max, ceil_div)");
  refused("min(a)", "expected ','");
  refused("99999999999999999999", "does not fit 64 bits");
  refused("a # b", "unexpected '#'");
  std::string deep = "a";
  for (int i = 0; i < 40; ++i) {
    deep = "(" + deep + " + b)";
  }
  std::string right = "a";
  for (int i = 0; i < 40; ++i) {
    right = "a + (" + right + ")";
  }
  refused(right, "nested deeper than 32 values");
  CHECK_NOTHROW(Expr::compile(deep, names, "t"));  // left-nested: the stack stays shallow
  CHECK_THROWS_WITH(ExprNames(names).add("a"), Catch::Contains("'a' is declared twice"));
}

TEST_CASE("an expression reads the slots it names", "[ops][expr]") {
  const ExprNames names = abc();
  const Expr expr = Expr::compile("a * 2 + c", names, "t");
  CHECK(expr.reads(0));
  CHECK_FALSE(expr.reads(1));
  CHECK(expr.reads(2));
}
