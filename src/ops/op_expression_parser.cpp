// op_expression_parser.cpp: the expression language's parser: recursive descent straight into the
// flat program (src/ops/op_expression.hpp), tracking the stack's depth; jumps for && || ?: so the
// evaluator evaluates only the side it needs.
#include <fmt/format.h>

#include "metrale/error.hpp"
#include "ops/op_expression.hpp"

namespace metrale::ops {

using Code = Expr::Code;

class ExprParser {
 public:
  ExprParser(std::string_view text, const ExprNames& names, std::string_view where)
      : text_(text), names_(names), where_(where) {}

  Expr parse() {
    ternary();
    skip_space();
    if (pos_ < text_.size()) {
      fail(fmt::format("unexpected '{}' after the expression", text_[pos_]));
    }
    out_.text_ = std::string(text_);
    return std::move(out_);
  }

 private:
  [[noreturn]] void fail(std::string_view what) const {
    throw ArgumentError(fmt::format("{}: expression '{}': column {}: {}", where_, text_, pos_ + 1, what));
  }
  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t')) {
      ++pos_;
    }
  }
  // Consumes `token` when it comes next (a one-character operator is not the start of a longer one).
  bool accept(std::string_view token) {
    skip_space();
    if (text_.substr(pos_, token.size()) != token) {
      return false;
    }
    if (token.size() == 1 && pos_ + 1 < text_.size()) {
      const char next = text_[pos_ + 1];
      const bool longer = (next == '=' && std::string_view("<>=!").find(token[0]) != std::string_view::npos) ||
                          (token[0] == '&' && next == '&') || (token[0] == '|' && next == '|');
      if (longer) {
        return false;
      }
    }
    pos_ += token.size();
    return true;
  }
  void expect(std::string_view token) {
    if (!accept(token)) {
      fail(pos_ < text_.size() ? fmt::format("expected '{}', found '{}'", token, text_[pos_])
                               : fmt::format("expected '{}' at the end", token));
    }
  }
  // Emits a step; `effect` is its change to the stack's depth.
  std::size_t emit(Code code, std::int64_t operand, int effect) {
    depth_ += effect;
    if (depth_ > static_cast<int>(kMaxExprDepth)) {
      fail(fmt::format("nested deeper than {} values", kMaxExprDepth));
    }
    out_.program_.push_back({code, operand});
    return out_.program_.size() - 1;
  }
  void land(std::size_t jump) { out_.program_[jump].operand = static_cast<std::int64_t>(out_.program_.size()); }

  void ternary() {
    logical_or();
    if (!accept("?")) {
      return;
    }
    const std::size_t to_else = emit(Code::kJumpIfZero, 0, -1);
    ternary();
    expect(":");
    const std::size_t to_end = emit(Code::kJump, 0, -1);  // the other branch pushes the one value
    land(to_else);
    ternary();
    land(to_end);
  }
  void logical_or() {
    logical_and();
    while (accept("||")) {
      const std::size_t jump = emit(Code::kOrJump, 0, -1);
      logical_and();
      emit(Code::kBool, 0, 0);
      land(jump);
    }
  }
  void logical_and() {
    equality();
    while (accept("&&")) {
      const std::size_t jump = emit(Code::kAndJump, 0, -1);
      equality();
      emit(Code::kBool, 0, 0);
      land(jump);
    }
  }
  void equality() {
    relational();
    for (;;) {
      if (accept("==")) {
        relational();
        emit(Code::kEq, 0, -1);
      } else if (accept("!=")) {
        relational();
        emit(Code::kNe, 0, -1);
      } else {
        return;
      }
    }
  }
  void relational() {
    additive();
    for (;;) {
      Code code{};
      if (accept("<=")) {
        code = Code::kLe;
      } else if (accept(">=")) {
        code = Code::kGe;
      } else if (accept("<")) {
        code = Code::kLt;
      } else if (accept(">")) {
        code = Code::kGt;
      } else {
        return;
      }
      additive();
      emit(code, 0, -1);
    }
  }
  void additive() {
    multiplicative();
    for (;;) {
      const bool add = accept("+");
      if (!add && !accept("-")) {
        return;
      }
      multiplicative();
      emit(add ? Code::kAdd : Code::kSub, 0, -1);
    }
  }
  void multiplicative() {
    unary();
    for (;;) {
      Code code{};
      if (accept("*")) {
        code = Code::kMul;
      } else if (accept("/")) {
        code = Code::kDiv;
      } else if (accept("%")) {
        code = Code::kMod;
      } else {
        return;
      }
      unary();
      emit(code, 0, -1);
    }
  }
  void unary() {
    if (accept("-")) {
      unary();
      emit(Code::kNeg, 0, 0);
    } else if (accept("!")) {
      unary();
      emit(Code::kNot, 0, 0);
    } else {
      primary();
    }
  }
  void primary() {
    skip_space();
    if (accept("(")) {
      ternary();
      expect(")");
      return;
    }
    if (pos_ >= text_.size()) {
      fail("expected a number, a name or '(' at the end");
    }
    const char c = text_[pos_];
    if (c >= '0' && c <= '9') {
      number();
    } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') {
      name();
    } else {
      fail(fmt::format("expected a number, a name or '(', found '{}'", c));
    }
  }
  void number() {
    std::int64_t value = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      if (__builtin_mul_overflow(value, 10, &value) || __builtin_add_overflow(value, text_[pos_] - '0', &value)) {
        fail("the number does not fit 64 bits");
      }
      ++pos_;
    }
    emit(Code::kConst, value, 1);
  }
  void name() {
    const std::size_t start = pos_;
    const auto is_name = [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
    };
    while (pos_ < text_.size() && is_name(text_[pos_])) {
      ++pos_;
    }
    const std::string_view word = text_.substr(start, pos_ - start);
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == '(') {
      call(word, start);
      return;
    }
    const auto slot = names_.find(word);
    if (!slot) {
      pos_ = start;
      fail(fmt::format("unknown name '{}' (known: {})", word, names_.list()));
    }
    emit(Code::kSlot, static_cast<std::int64_t>(*slot), 1);
  }
  void call(std::string_view function, std::size_t start) {
    Code code{};
    if (function == "min") {
      code = Code::kMin;
    } else if (function == "max") {
      code = Code::kMax;
    } else if (function == "ceil_div") {
      code = Code::kCeilDiv;
    } else {
      pos_ = start;
      fail(fmt::format("unknown function '{}' (known: min, max, ceil_div)", function));
    }
    expect("(");
    ternary();
    expect(",");
    ternary();
    expect(")");
    emit(code, 0, -1);
  }

  std::string_view text_;
  const ExprNames& names_;
  std::string_view where_;
  std::size_t pos_ = 0;
  int depth_ = 0;
  Expr out_;
};

Expr Expr::compile(std::string_view text, const ExprNames& names, std::string_view where) {
  return ExprParser(text, names, where).parse();
}

}  // namespace metrale::ops
