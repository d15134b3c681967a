// op_expression.cpp: the expression language's name table and its evaluator (a loop over the flat
// program with a fixed stack; the parser is op_expression_parser.cpp).
#include "ops/op_expression.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>

#include "metrale/error.hpp"

namespace metrale::ops {

std::size_t ExprNames::add(std::string name) {
  if (name.empty() || find(name)) {
    throw ArgumentError(fmt::format("expression names: '{}' is {}", name, name.empty() ? "empty" : "declared twice"));
  }
  names_.push_back(std::move(name));
  return names_.size() - 1;
}

std::optional<std::size_t> ExprNames::find(std::string_view name) const {
  const auto found = std::find(names_.begin(), names_.end(), name);
  return found == names_.end() ? std::nullopt : std::optional<std::size_t>(found - names_.begin());
}

std::string ExprNames::list() const {
  std::string out;
  for (const std::string& name : names_) {
    out += (out.empty() ? "" : ", ") + name;
  }
  return out;
}

std::string_view to_string(ExprFault fault) {
  switch (fault) {
    case ExprFault::kNone:
      return "";
    case ExprFault::kDivisionByZero:
      return "division by zero";
    case ExprFault::kOverflow:
      return "integer overflow";
  }
  return "unknown fault";
}

using Code = Expr::Code;

bool Expr::reads(std::size_t slot) const {
  return std::any_of(program_.begin(), program_.end(), [&](const Step& step) {
    return step.code == Code::kSlot && step.operand == static_cast<std::int64_t>(slot);
  });
}

namespace {

// a / b and a % b (C's truncation); ceil_div rounds towards +infinity. Fault on b == 0 or overflow.
ExprFault divide(Code code, std::int64_t a, std::int64_t b, std::int64_t& out) {
  if (b == 0) {
    return ExprFault::kDivisionByZero;
  }
  if (a == std::numeric_limits<std::int64_t>::min() && b == -1) {
    return ExprFault::kOverflow;
  }
  const std::int64_t q = a / b;
  const std::int64_t r = a % b;
  out = code == Code::kMod ? r : code == Code::kDiv ? q : q + ((r != 0 && ((a < 0) == (b < 0))) ? 1 : 0);
  return ExprFault::kNone;
}

ExprFault binary(Code code, std::int64_t a, std::int64_t b, std::int64_t& out) {
  switch (code) {
    case Code::kAdd:
      return __builtin_add_overflow(a, b, &out) ? ExprFault::kOverflow : ExprFault::kNone;
    case Code::kSub:
      return __builtin_sub_overflow(a, b, &out) ? ExprFault::kOverflow : ExprFault::kNone;
    case Code::kMul:
      return __builtin_mul_overflow(a, b, &out) ? ExprFault::kOverflow : ExprFault::kNone;
    case Code::kDiv:
    case Code::kMod:
    case Code::kCeilDiv:
      return divide(code, a, b, out);
    case Code::kLt:
      out = a < b;
      break;
    case Code::kLe:
      out = a <= b;
      break;
    case Code::kGt:
      out = a > b;
      break;
    case Code::kGe:
      out = a >= b;
      break;
    case Code::kEq:
      out = a == b;
      break;
    case Code::kNe:
      out = a != b;
      break;
    case Code::kMin:
      out = std::min(a, b);
      break;
    case Code::kMax:
      out = std::max(a, b);
      break;
    default:
      break;
  }
  return ExprFault::kNone;
}

}  // namespace

ExprResult Expr::evaluate(std::span<const std::int64_t> slots) const noexcept {
  std::array<std::int64_t, kMaxExprDepth> stack{};
  std::size_t top = 0;  // values on the stack
  std::size_t pc = 0;
  while (pc < program_.size()) {
    const Step& step = program_[pc++];
    switch (step.code) {
      case Code::kConst:
        stack[top++] = step.operand;
        break;
      case Code::kSlot: {
        const auto slot = static_cast<std::size_t>(step.operand);
        stack[top++] = slot < slots.size() ? slots[slot] : 0;
        break;
      }
      case Code::kNeg:
        if (stack[top - 1] == std::numeric_limits<std::int64_t>::min()) {
          return {0, ExprFault::kOverflow};
        }
        stack[top - 1] = -stack[top - 1];
        break;
      case Code::kNot:
        stack[top - 1] = stack[top - 1] == 0;
        break;
      case Code::kBool:
        stack[top - 1] = stack[top - 1] != 0;
        break;
      case Code::kAndJump:
        if (stack[top - 1] == 0) {
          pc = static_cast<std::size_t>(step.operand);
        } else {
          --top;
        }
        break;
      case Code::kOrJump:
        if (stack[top - 1] != 0) {
          stack[top - 1] = 1;
          pc = static_cast<std::size_t>(step.operand);
        } else {
          --top;
        }
        break;
      case Code::kJumpIfZero:
        if (stack[--top] == 0) {
          pc = static_cast<std::size_t>(step.operand);
        }
        break;
      case Code::kJump:
        pc = static_cast<std::size_t>(step.operand);
        break;
      default: {
        std::int64_t out = 0;
        const ExprFault fault = binary(step.code, stack[top - 2], stack[top - 1], out);
        if (fault != ExprFault::kNone) {
          return {0, fault};
        }
        stack[--top - 1] = out;
        break;
      }
    }
  }
  return {top == 1 ? stack[0] : 0, ExprFault::kNone};
}

}  // namespace metrale::ops
