// host/cuda_source_rewrite.cpp: a tokenizer for the compiler's preprocessed output (line markers,
// string and character literals, raw strings, pp-numbers) and the rewrites and refusals of the
// header, applied as edits to the text at the end so offsets stay those of the input.
#include "host/cuda_source_rewrite.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <set>
#include <utility>
#include <vector>

namespace metrale::host {
namespace {

enum class Kind : std::uint8_t { kIdentifier, kLiteral, kNumber, kPunctuator };

struct Token {
  Kind kind = Kind::kPunctuator;
  std::size_t begin = 0;
  std::size_t end = 0;
  std::uint32_t line = 0;
  std::uint32_t file = 0;  // index into the file names
};

struct Edit {
  std::size_t begin;
  std::size_t end;
  std::string text;
};

bool identifier_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '$'; }
bool identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '$'; }

// The engine's tokens of a preprocessed unit, with the name of the file each comes from.
class Scanner {
 public:
  Scanner(std::string_view text, const SourceNameFn& source_name) : text_(text), source_name_(source_name) {}

  void run() {
    while (at_ < text_.size()) {
      const char c = text_[at_];
      if (c == '\n') {
        ++line_;
        ++at_;
        line_start_ = true;
        continue;
      }
      if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
        ++at_;
        continue;
      }
      if (line_start_ && c == '#') {
        directive();
        continue;
      }
      line_start_ = false;
      token();
    }
  }

  std::vector<Token> tokens;
  std::vector<std::string> files;

 private:
  // `# N "file" flags` sets the next line's position; other directives (#pragma) are skipped.
  void directive() {
    const std::size_t end = std::min(text_.find('\n', at_), text_.size());
    const std::string_view line = text_.substr(at_, end - at_);
    at_ = end;
    std::size_t i = 1;
    while (i < line.size() && line[i] == ' ') {
      ++i;
    }
    if (i < line.size() && line.substr(i).starts_with("line")) {
      i += 4;
      while (i < line.size() && line[i] == ' ') {
        ++i;
      }
    }
    if (i >= line.size() || std::isdigit(static_cast<unsigned char>(line[i])) == 0) {
      return;
    }
    std::uint32_t number = 0;
    while (i < line.size() && std::isdigit(static_cast<unsigned char>(line[i])) != 0) {
      number = number * 10U + static_cast<std::uint32_t>(line[i] - '0');
      ++i;
    }
    line_ = number - 1;  // the directive's own newline counts it up
    const std::size_t quote = line.find('"', i);
    if (quote == std::string_view::npos) {
      return;
    }
    std::string path;
    std::size_t j = quote + 1;
    for (; j < line.size() && line[j] != '"'; ++j) {
      if (line[j] == '\\' && j + 1 < line.size()) {
        ++j;
      }
      path.push_back(line[j]);
    }
    const std::optional<std::string> name = source_name_(path);
    in_source_ = name.has_value();
    if (in_source_) {
      const auto known = std::find(files.begin(), files.end(), *name);
      file_ = static_cast<std::uint32_t>(known - files.begin());
      if (known == files.end()) {
        files.push_back(*name);
      }
    }
  }

  void emit(Kind kind, std::size_t begin) {
    if (in_source_) {
      tokens.push_back(Token{kind, begin, at_, line_, file_});
    }
  }

  // A quoted literal from at_ (on its opening quote) to its closing quote.
  void quoted(char quote) {
    ++at_;
    while (at_ < text_.size() && text_[at_] != quote && text_[at_] != '\n') {
      at_ += text_[at_] == '\\' ? 2 : 1;
    }
    at_ = std::min(at_ + 1, text_.size());
  }

  // R"delim( ... )delim", at_ on the opening quote; its newlines count.
  void raw_string() {
    const std::size_t open = text_.find('(', at_);
    if (open == std::string_view::npos) {
      at_ = text_.size();
      return;
    }
    const std::string closing = ")" + std::string(text_.substr(at_ + 1, open - at_ - 1)) + "\"";
    const std::size_t close = text_.find(closing, open);
    const std::size_t end = close == std::string_view::npos ? text_.size() : close + closing.size();
    line_ += static_cast<std::uint32_t>(std::count(text_.begin() + static_cast<std::ptrdiff_t>(at_),
                                                   text_.begin() + static_cast<std::ptrdiff_t>(end), '\n'));
    at_ = end;
  }

  void token() {
    const std::size_t begin = at_;
    const char c = text_[at_];
    if (identifier_start(c)) {
      while (at_ < text_.size() && identifier_char(text_[at_])) {
        ++at_;
      }
      const std::string_view word = text_.substr(begin, at_ - begin);
      if (at_ < text_.size() && (text_[at_] == '"' || text_[at_] == '\'')) {
        static constexpr std::array<std::string_view, 5> kPrefixes{"u8", "u", "U", "L", ""};
        static constexpr std::array<std::string_view, 4> kRaw{"R", "u8R", "uR", "UR"};
        if (text_[at_] == '"' && (std::find(kRaw.begin(), kRaw.end(), word) != kRaw.end() || word == "LR")) {
          raw_string();
          emit(Kind::kLiteral, begin);
          return;
        }
        if (std::find(kPrefixes.begin(), kPrefixes.end(), word) != kPrefixes.end()) {
          quoted(text_[at_]);
          emit(Kind::kLiteral, begin);
          return;
        }
      }
      emit(Kind::kIdentifier, begin);
      return;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) != 0 ||
        (c == '.' && at_ + 1 < text_.size() && std::isdigit(static_cast<unsigned char>(text_[at_ + 1])) != 0)) {
      ++at_;
      while (at_ < text_.size()) {
        const char d = text_[at_];
        const char before = text_[at_ - 1];
        if (identifier_char(d) || d == '.' ||
            ((d == '+' || d == '-') && (before == 'e' || before == 'E' || before == 'p' || before == 'P')) ||
            (d == '\'' && at_ + 1 < text_.size() && identifier_char(text_[at_ + 1]))) {
          ++at_;
          continue;
        }
        break;
      }
      emit(Kind::kNumber, begin);
      return;
    }
    if (c == '"' || c == '\'') {
      quoted(c);
      emit(Kind::kLiteral, begin);
      return;
    }
    const std::string_view rest = text_.substr(at_);
    std::size_t length = 1;
    for (const std::string_view multi : {"<<<", ">>>", "::", "->"}) {
      if (rest.starts_with(multi)) {
        length = multi.size();
        break;
      }
    }
    at_ += length;
    emit(Kind::kPunctuator, begin);
  }

  std::string_view text_;
  const SourceNameFn& source_name_;
  std::size_t at_ = 0;
  std::uint32_t line_ = 1;
  std::uint32_t file_ = 0;
  bool in_source_ = false;
  bool line_start_ = true;
};

class Rewriter {
 public:
  Rewriter(std::string_view text, const Scanner& scanned)
      : text_(text), tokens_(scanned.tokens), files_(scanned.files) {}

  void run() {
    for (std::size_t i = 0; i < tokens_.size(); ++i) {
      const std::string_view word = spelling(i);
      if (tokens_[i].kind == Kind::kPunctuator) {
        if (word == "<<<") {
          refuse(i, "a kernel launch inside a kernel (<<<...>>>, dynamic parallelism)");
        } else if (word == "{") {
          scopes_.push_back(i);
        } else if (word == "}" && !scopes_.empty()) {
          scopes_.pop_back();
        }
        continue;
      }
      if (tokens_[i].kind != Kind::kIdentifier) {
        continue;
      }
      // `extern __shared__`, `__shared__ extern`, and `extern __align__(16) __shared__` (attributes between).
      if ((word == "extern" && is(after_attributes(i + 1), "thread_local")) ||
          (word == "thread_local" && is(i + 1, "extern"))) {
        i = extern_shared(i);
      } else if (word == "printf" && is(i + 1, "(")) {
        call_printf(i);
      } else if (word == "template" && is(i + 1, "inline")) {
        // An explicit instantiation (`template __global__ void k<float>(...);`, also after
        // `extern`): the prelude spells __global__ `inline`, which C++ forbids there.
        edits_.push_back({tokens_[i + 1].begin, tokens_[i + 1].end, ""});
      } else if (word == "__assert_fail" && is(i + 1, "(")) {
        edits_.push_back({tokens_[i].begin, tokens_[i].end, "::metrale::host::detail::kernel_assert_fail"});
      } else {
        unsupported(i, word);
      }
    }
  }

  CudaSourceRewrite result() {
    CudaSourceRewrite out;
    if (!refusals_.empty()) {
      constexpr std::size_t kNamed = 8;
      std::string listed;
      for (std::size_t k = 0; k < refusals_.size() && k < kNamed; ++k) {
        listed += (k == 0 ? "" : ", ") + refusals_[k];
      }
      if (refusals_.size() > kNamed) {
        listed += fmt::format(" and {} more", refusals_.size() - kNamed);
      }
      out.refusal = fmt::format(
          "the host backend cannot run {}; a GPU runs it (the registry's NVRTC build), the host backend only "
          "kernels without these",
          listed);
      return out;
    }
    std::sort(edits_.begin(), edits_.end(), [](const Edit& a, const Edit& b) { return a.begin < b.begin; });
    out.text.reserve(text_.size() + edits_.size() * 160);
    std::size_t from = 0;
    for (const Edit& edit : edits_) {
      out.text.append(text_.substr(from, edit.begin - from));
      out.text.append(edit.text);
      from = edit.end;
    }
    out.text.append(text_.substr(from));
    return out;
  }

 private:
  [[nodiscard]] std::string_view spelling(std::size_t i) const {
    return text_.substr(tokens_[i].begin, tokens_[i].end - tokens_[i].begin);
  }
  [[nodiscard]] bool is(std::size_t i, std::string_view word) const {
    return i < tokens_.size() && spelling(i) == word;
  }
  [[nodiscard]] std::string where(std::size_t i) const {
    return fmt::format("{}:{}", files_[tokens_[i].file], tokens_[i].line);
  }
  void refuse(std::size_t i, std::string_view construct) {
    std::string named = fmt::format("{} at {}", construct, where(i));
    if (std::find(refusals_.begin(), refusals_.end(), named) == refusals_.end()) {
      refusals_.push_back(std::move(named));
    }
  }

  void unsupported(std::size_t i, std::string_view word) {
    if (word == "asm" || word == "__asm__" || word == "__asm") {
      refuse(i, fmt::format("inline PTX ({})", word));
    } else if ((word == "texture" || word == "surface") && is(i + 1, "<")) {
      refuse(i, fmt::format("a {} reference ({}<...>)", word, word));
    } else if (word == "cudaTextureObject_t" || word == "cudaSurfaceObject_t") {
      refuse(i, fmt::format("a {} object ({})", word == "cudaTextureObject_t" ? "texture" : "surface", word));
    } else if (word == "nvcuda") {
      refuse(i, "the warp matrix functions (nvcuda::wmma)");
    } else if (is(i + 1, "(") || is(i + 1, "<")) {
      for (const std::string_view dims : {"1D", "2D", "3D", "Cubemap"}) {
        if (word.starts_with(fmt::format("tex{}", dims))) {
          refuse(i, fmt::format("a texture fetch ({})", word));
        } else if (word.starts_with(fmt::format("surf{}", dims))) {
          refuse(i, fmt::format("a surface access ({})", word));
        }
      }
    }
  }

  // printf( ::printf( std::printf( -> kernel_printf(; a member's printf is someone else's.
  void call_printf(std::size_t i) {
    std::size_t begin = tokens_[i].begin;
    if (i > 0 && (is(i - 1, ".") || is(i - 1, "->"))) {
      return;
    }
    if (i > 0 && is(i - 1, "::")) {
      if (i > 1 && tokens_[i - 2].kind == Kind::kIdentifier) {
        if (!is(i - 2, "std")) {
          return;  // another namespace's printf
        }
        begin = tokens_[i - 2].begin;
      } else {
        begin = tokens_[i - 1].begin;
      }
    }
    edits_.push_back({begin, tokens_[i].end, "::metrale::host::detail::kernel_printf"});
  }

  // The first token at or after `i` that is not an attribute (__attribute__((...)), alignas(...),
  // __declspec(...), [[...]]).
  [[nodiscard]] std::size_t after_attributes(std::size_t i) const {
    while (i < tokens_.size()) {
      const std::string_view s = spelling(i);
      if (s == "__attribute__" || s == "alignas" || s == "__declspec") {
        i = std::max(i + 1, skip_group(i + 1));
      } else if (s == "[" && is(i + 1, "[")) {
        i = std::max(i + 1, skip_group(i));
      } else {
        break;
      }
    }
    return i;
  }

  // The index of the first token after a balanced group opening at `i` ("(" or "["), or `i` when
  // the token there opens none.
  [[nodiscard]] std::size_t skip_group(std::size_t i) const {
    const std::string_view open = i < tokens_.size() ? spelling(i) : std::string_view();
    if (open != "(" && open != "[") {
      return i;
    }
    const std::string_view close = open == "(" ? ")" : "]";
    int depth = 0;
    for (std::size_t j = i; j < tokens_.size(); ++j) {
      if (spelling(j) == open) {
        ++depth;
      } else if (spelling(j) == close && --depth == 0) {
        return j + 1;
      }
    }
    return tokens_.size();
  }

  // `extern thread_local T name[]...;` at `first`: an edit, or a refusal; returns the last token used.
  std::size_t extern_shared(std::size_t first) {
    std::size_t end = first;
    int depth = 0;
    for (; end < tokens_.size(); ++end) {
      const std::string_view s = spelling(end);
      if (s == "(" || s == "[") {
        ++depth;
      } else if (s == ")" || s == "]") {
        --depth;
      } else if (depth == 0 && (s == ";" || s == "{" || s == "}")) {
        break;
      }
    }
    if (end >= tokens_.size() || spelling(end) != ";") {
      refuse(first, "an extern __shared__ declaration without its ';'");
      return end;
    }
    // The declaration without extern, thread_local and attributes (alignment: the buffer is 128-byte aligned).
    std::vector<std::size_t> kept;
    for (std::size_t i = first; i < end;) {
      const std::string_view s = spelling(i);
      if (s == "extern" || s == "thread_local") {
        ++i;
      } else if (s == "__attribute__" || s == "alignas" || s == "__declspec") {
        i = std::max(i + 1, skip_group(i + 1));
      } else if (s == "[" && is(i + 1, "[")) {
        i = std::max(i + 1, skip_group(i));
      } else {
        kept.push_back(i++);
      }
    }
    const auto bracket = std::find_if(kept.begin(), kept.end(), [&](std::size_t i) { return spelling(i) == "["; });
    const bool shaped = bracket != kept.begin() && bracket != kept.end() && bracket - kept.begin() >= 2 &&
                        tokens_[*(bracket - 1)].kind == Kind::kIdentifier && bracket + 1 != kept.end() &&
                        spelling(*(bracket + 1)) == "]";
    std::string suffix;
    bool suffix_ok = shaped;
    if (shaped) {
      for (auto it = bracket + 2; it != kept.end(); ++it) {
        const std::string_view s = spelling(*it);
        if (s == "=" || s == "," || s == "(") {
          suffix_ok = false;
          break;
        }
        suffix += (suffix.empty() ? "" : " ") + std::string(s);
      }
      suffix_ok = suffix_ok && (suffix.empty() || (suffix.front() == '[' && suffix.back() == ']'));
    }
    if (!suffix_ok) {
      refuse(first, "an extern __shared__ declaration other than one unsized array (extern __shared__ T name[];)");
      return end;
    }
    std::string type;
    for (auto it = kept.begin(); it != bracket - 1; ++it) {
      type += (type.empty() ? "" : " ") + std::string(spelling(*it));
    }
    const std::string name(spelling(*(bracket - 1)));
    const auto newlines = std::count(text_.begin() + static_cast<std::ptrdiff_t>(tokens_[first].begin),
                                     text_.begin() + static_cast<std::ptrdiff_t>(tokens_[end].end), '\n');
    // A second declaration of the name in the same scope (a header's, again) names the same
    // pointer: it goes, its newlines stay.
    const std::size_t scope = scopes_.empty() ? tokens_.size() : scopes_.back();
    if (!declared_.emplace(scope, name).second) {
      edits_.push_back({tokens_[first].begin, tokens_[end].end, std::string(static_cast<std::size_t>(newlines), '\n')});
      return end;
    }
    const std::size_t n = declarations_++;
    edits_.push_back(
        {tokens_[first].begin, tokens_[end].end,
         fmt::format("using metrale_extern_shared_type_{0} = {1} (*){2}; "
                     "static thread_local metrale_extern_shared_type_{0} {3} = "
                     "::metrale::host::detail::extern_shared<metrale_extern_shared_type_{0}>(); "
                     "static const ::metrale::host::detail::ExternSharedHook metrale_extern_shared_hook_{0}"
                     "{{+[]() {{ {3} = ::metrale::host::detail::extern_shared<metrale_extern_shared_type_{0}>(); "
                     "}}}};{4}",
                     n, type, suffix, name, std::string(static_cast<std::size_t>(newlines), '\n'))});
    return end;
  }

  std::string_view text_;
  const std::vector<Token>& tokens_;
  const std::vector<std::string>& files_;
  std::vector<Edit> edits_;
  std::vector<std::string> refusals_;
  std::size_t declarations_ = 0;
  std::vector<std::size_t> scopes_;                         // the open braces, innermost last
  std::set<std::pair<std::size_t, std::string>> declared_;  // (innermost brace, name) rewritten
};

}  // namespace

CudaSourceRewrite rewrite_cuda_source(std::string_view preprocessed, const SourceNameFn& source_name) {
  Scanner scanner(preprocessed, source_name);
  scanner.run();
  Rewriter rewriter(preprocessed, scanner);
  rewriter.run();
  return rewriter.result();
}

}  // namespace metrale::host
