// host/cuda_token_scanner.cpp: a one-pass scanner over preprocessed text: whitespace, line
// markers (`# N "file" flags`, `#line N`), literals, identifiers, pp-numbers and punctuators
// (the multi-character ones the rewrite looks for: <<<, >>>, ::, ->).
#include "host/cuda_token_scanner.hpp"

#include <algorithm>
#include <array>
#include <cctype>

namespace metrale::host {
namespace {

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

  void emit(TokenKind kind, std::size_t begin) {
    if (in_source_) {
      tokens.push_back(Token{kind, begin, at_, line_, file_});
    }
  }

  // A quoted literal from at_ (on its opening quote) to its closing quote; an unterminated one
  // ends before its line's newline, which stays outside every token (so lines are counted and no
  // edit's text can carry a newline).
  void quoted(char quote) {
    ++at_;
    while (at_ < text_.size() && text_[at_] != quote && text_[at_] != '\n') {
      const bool escape = text_[at_] == '\\' && at_ + 1 < text_.size() && text_[at_ + 1] != '\n';
      at_ += escape ? 2 : 1;
    }
    if (at_ < text_.size() && text_[at_] == quote) {
      ++at_;
    }
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
          emit(TokenKind::kLiteral, begin);
          return;
        }
        if (std::find(kPrefixes.begin(), kPrefixes.end(), word) != kPrefixes.end()) {
          quoted(text_[at_]);
          emit(TokenKind::kLiteral, begin);
          return;
        }
      }
      emit(TokenKind::kIdentifier, begin);
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
      emit(TokenKind::kNumber, begin);
      return;
    }
    if (c == '"' || c == '\'') {
      quoted(c);
      emit(TokenKind::kLiteral, begin);
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
    emit(TokenKind::kPunctuator, begin);
  }

  std::string_view text_;
  const SourceNameFn& source_name_;
  std::size_t at_ = 0;
  std::uint32_t line_ = 1;
  std::uint32_t file_ = 0;
  bool in_source_ = false;
  bool line_start_ = true;
};

}  // namespace

ScannedUnit scan_engine_tokens(std::string_view preprocessed, const SourceNameFn& source_name) {
  Scanner scanner(preprocessed, source_name);
  scanner.run();
  return ScannedUnit{std::move(scanner.tokens), std::move(scanner.files)};
}

}  // namespace metrale::host
