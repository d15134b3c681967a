// host/function_bodies.cpp: a brace is a function's body when, read backwards from it, come the
// declarator's trailing parts (cv and ref qualifiers, noexcept, attributes, a trailing return
// type, a constructor's member initializers) and then a parameter list whose '(' follows a name
// that is not a keyword (or an `operator` spelling).
#include "host/function_bodies.hpp"

#include <algorithm>
#include <array>
#include <optional>

namespace metrale::host {
namespace {

constexpr std::size_t kNone = static_cast<std::size_t>(-1);

class BodyFinder {
 public:
  BodyFinder(std::string_view text, std::span<const Token> tokens) : text_(text), tokens_(tokens) {}

  std::vector<FunctionBody> run() {
    struct Open {
      std::size_t brace;
      std::optional<FunctionBody> body;
    };
    std::vector<Open> open;
    bool in_body = false;
    std::vector<FunctionBody> bodies;
    for (std::size_t i = 0; i < tokens_.size(); ++i) {
      const std::string_view s = spelling(i);
      if (s == "{") {
        std::optional<FunctionBody> body;
        if (!in_body) {
          if (const std::size_t name = name_before(i); name != kNone) {
            body = FunctionBody{qualified_name(name), name, i, 0};
            in_body = true;
          }
        }
        open.push_back({i, std::move(body)});
      } else if (s == "}" && !open.empty()) {
        if (open.back().body) {
          open.back().body->close = i;
          bodies.push_back(std::move(*open.back().body));
          in_body = false;
        }
        open.pop_back();
      }
    }
    std::sort(bodies.begin(), bodies.end(),
              [](const FunctionBody& a, const FunctionBody& b) { return a.open < b.open; });
    return bodies;
  }

 private:
  [[nodiscard]] std::string_view spelling(std::size_t i) const {
    return text_.substr(tokens_[i].begin, tokens_[i].end - tokens_[i].begin);
  }
  [[nodiscard]] bool is_identifier(std::size_t i) const { return tokens_[i].kind == TokenKind::kIdentifier; }

  // Words that stand before a parenthesised group without naming a function.
  static bool is_group_keyword(std::string_view word) {
    static constexpr std::array<std::string_view, 18> kWords{
        "if",       "while",         "for",           "switch",     "catch",    "return",
        "sizeof",   "alignof",       "static_assert", "decltype",   "noexcept", "throw",
        "requires", "__attribute__", "alignas",       "__declspec", "asm",      "__asm__"};
    return std::find(kWords.begin(), kWords.end(), word) != kWords.end();
  }
  // What may stand between a parameter list and the body.
  static bool is_trailing_qualifier(std::string_view word) {
    static constexpr std::array<std::string_view, 9> kWords{"const",   "volatile", "override", "final", "noexcept",
                                                            "mutable", "&",        "&&",       "->"};
    return std::find(kWords.begin(), kWords.end(), word) != kWords.end();
  }

  // The '(' or '[' that the ')' or ']' at `close` closes, or kNone.
  [[nodiscard]] std::size_t opening_of(std::size_t close) const {
    const std::string_view closer = spelling(close);
    const std::string_view opener = closer == ")" ? "(" : "[";
    int depth = 0;
    for (std::size_t j = close + 1; j-- > 0;) {
      if (spelling(j) == closer) {
        ++depth;
      } else if (spelling(j) == opener && --depth == 0) {
        return j;
      } else if (spelling(j) == "{" || spelling(j) == "}" || spelling(j) == ";") {
        return kNone;
      }
    }
    return kNone;
  }

  // The token naming the function whose body opens at `brace`, or kNone.
  [[nodiscard]] std::size_t name_before(std::size_t brace) const {
    std::size_t j = brace;
    while (j-- > 0) {
      const std::string_view s = spelling(j);
      if (is_trailing_qualifier(s)) {
        continue;
      }
      if (s == "]" && j > 0 && spelling(j - 1) == "]") {  // [[attribute]]
        const std::size_t inner = opening_of(j - 1);
        if (inner == kNone || inner == 0) {
          return kNone;
        }
        j = inner - 1;  // on the outer '[': the loop steps back past it
        continue;
      }
      if (s == ")") {
        const std::size_t paren = opening_of(j);
        if (paren == kNone || paren == 0) {
          return kNone;
        }
        const std::size_t before = paren - 1;
        const std::string_view word = spelling(before);
        if (word == "noexcept" || word == "throw" || word == "__attribute__" || word == "decltype" ||
            word == "requires" || word == "__declspec" || word == "alignas") {
          j = before;
          continue;
        }
        if (const std::size_t op = operator_before(paren); op != kNone) {
          return op;
        }
        if (!is_identifier(before) || is_group_keyword(word)) {
          return kNone;
        }
        // `S() : a(1), b(2) {`: `b` is a member initializer; the declarator is before the ':'.
        if (const std::size_t colon = initializer_colon(before); colon != kNone) {
          j = colon;
          continue;
        }
        return before;
      }
      // A trailing return type's words lead back to its '->'.
      if (is_identifier(j) || s == "::" || s == "<" || s == ">" || s == "*" || s == ",") {
        std::size_t k = j;
        while (k-- > 0 && spelling(k) != "->") {
          const std::string_view t = spelling(k);
          if (t == ")" || t == ";" || t == "{" || t == "}" || t == "=" || t == "(") {
            return kNone;
          }
        }
        if (k == kNone) {
          return kNone;
        }
        j = k;
        continue;
      }
      return kNone;
    }
    return kNone;
  }

  // For `operator...(` with its '(' at `paren`: the `operator` token, else kNone.
  [[nodiscard]] std::size_t operator_before(std::size_t paren) const {
    constexpr std::size_t kLongest = 4;  // operator T*, operator(), operator<<=, operator new[]
    for (std::size_t k = paren; k-- > 0 && paren - k <= kLongest;) {
      const std::string_view s = spelling(k);
      if (s == "operator") {
        return k;
      }
      if (s == ";" || s == "{" || s == "}") {
        break;
      }
    }
    return kNone;
  }

  // When `name` starts a member initializer (after ':' or ','), the ':' that follows the
  // constructor's parameters (the caller steps back from it onto their ')'), else kNone.
  [[nodiscard]] std::size_t initializer_colon(std::size_t name) const {
    std::size_t k = name;
    while (k > 1 && spelling(k - 1) == "::" && is_identifier(k - 2)) {
      k -= 2;
    }
    if (k == 0 || (spelling(k - 1) != "," && spelling(k - 1) != ":")) {
      return kNone;
    }
    for (std::size_t m = k; m-- > 0;) {
      const std::string_view s = spelling(m);
      if (s == ":") {
        return m > 0 && spelling(m - 1) == ")" ? m : kNone;
      }
      if (s == ")") {
        m = opening_of(m);
        if (m == kNone) {
          return kNone;
        }
      } else if (s == "}") {  // a member's brace initializer, a{1}
        int depth = 0;
        for (; m != kNone; --m) {
          depth += spelling(m) == "}" ? 1 : spelling(m) == "{" ? -1 : 0;
          if (depth == 0) {
            break;
          }
        }
        if (m == kNone) {
          return kNone;
        }
      } else if (s == ";" || s == "{") {
        return kNone;
      }
    }
    return kNone;
  }

  // `name` with the `A::B::` before it; an operator with its symbol.
  [[nodiscard]] std::string qualified_name(std::size_t name) const {
    std::string out(spelling(name));
    if (out == "operator") {
      for (std::size_t k = name + 1; k < tokens_.size() && spelling(k) != "("; ++k) {
        out += (is_identifier(k) ? " " : "") + std::string(spelling(k));
      }
      if (name + 2 < tokens_.size() && spelling(name + 1) == "(" && spelling(name + 2) == ")") {
        out += "()";
      }
    }
    for (std::size_t k = name; k > 1 && spelling(k - 1) == "::" && is_identifier(k - 2); k -= 2) {
      out.insert(0, "::");
      out.insert(0, spelling(k - 2));
    }
    return out;
  }

  std::string_view text_;
  std::span<const Token> tokens_;
};

}  // namespace

std::vector<FunctionBody> find_function_bodies(std::string_view text, std::span<const Token> tokens) {
  return BodyFinder(text, tokens).run();
}

const FunctionBody* body_holding(std::span<const FunctionBody> bodies, std::size_t token) {
  const auto after = std::upper_bound(bodies.begin(), bodies.end(), token,
                                      [](std::size_t t, const FunctionBody& body) { return t < body.open; });
  if (after == bodies.begin()) {
    return nullptr;
  }
  const FunctionBody& body = *(after - 1);
  return token > body.open && token < body.close ? &body : nullptr;
}

}  // namespace metrale::host
