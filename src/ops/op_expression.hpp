// ops/op_expression.hpp: the one small expression language of ops declared as data (guards, grids,
// blocks, kernel arguments, shape rules: include/metrale/ops/op_spec.hpp). An expression is parsed
// ONCE, at declaration, into a flat program over a fixed table of named slots (arguments, kernel
// parameters, device properties, levers); evaluating it reads the slots' values and allocates
// nothing.
// Invariants:
// - compile() refuses what evaluate() could not run: a syntax error names the expression and the
//   column, an unknown name names the name and the expression, a too-deep expression says so;
// - evaluate() is pure and noexcept: 64-bit signed integer arithmetic, comparisons and logic give
//   0 or 1, `&&`, `||` and `?:` evaluate only the side they need; division (or `%`, ceil_div) by
//   zero and overflow are a named ExprFault, never a wrapped value;
// - the program's stack never exceeds kMaxExprDepth (checked at compile), so evaluation uses a
//   fixed array.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace metrale::ops {

inline constexpr std::size_t kMaxExprDepth = 32;

// The names an expression may read; a name's index is its slot in the values of one evaluation.
class ExprNames {
 public:
  // The new name's slot; ArgumentError for an empty name or one already added.
  std::size_t add(std::string name);
  [[nodiscard]] std::optional<std::size_t> find(std::string_view name) const;
  [[nodiscard]] std::size_t size() const { return names_.size(); }
  [[nodiscard]] const std::string& name(std::size_t slot) const { return names_[slot]; }
  // "a, b, c" (for an unknown name's message).
  [[nodiscard]] std::string list() const;

 private:
  std::vector<std::string> names_;
};

enum class ExprFault : std::uint8_t { kNone, kDivisionByZero, kOverflow };
// "division by zero", "integer overflow"; "" for kNone.
std::string_view to_string(ExprFault fault);

struct ExprResult {
  std::int64_t value = 0;
  ExprFault fault = ExprFault::kNone;
  [[nodiscard]] bool ok() const { return fault == ExprFault::kNone; }
};

class Expr {
 public:
  // Parses `text` over `names`. `where` says what the expression is for in messages ("op X: role
  // twin: guard condition 2"). ArgumentError "<where>: expression '<text>': column N: <what>".
  static Expr compile(std::string_view text, const ExprNames& names, std::string_view where);

  // The value over `slots` (one per name, in ExprNames order). Allocates nothing.
  [[nodiscard]] ExprResult evaluate(std::span<const std::int64_t> slots) const noexcept;
  [[nodiscard]] const std::string& text() const { return text_; }
  // Whether the program reads `slot` (explain's search over M asks whether M matters).
  [[nodiscard]] bool reads(std::size_t slot) const;

  enum class Code : std::uint8_t {
    kConst,
    kSlot,
    kNeg,
    kNot,
    kAdd,
    kSub,
    kMul,
    kDiv,
    kMod,
    kLt,
    kLe,
    kGt,
    kGe,
    kEq,
    kNe,
    kMin,
    kMax,
    kCeilDiv,
    kBool,        // top := top != 0
    kAndJump,     // top == 0: jump to operand (top stays 0); else pop
    kOrJump,      // top != 0: top := 1, jump to operand; else pop
    kJumpIfZero,  // pop; zero: jump to operand
    kJump,        // jump to operand
  };
  struct Step {
    Code code = Code::kConst;
    std::int64_t operand = 0;
  };

 private:
  friend class ExprParser;
  std::vector<Step> program_;
  std::string text_;
};

}  // namespace metrale::ops
