// host/cuda_source_rewrite.cpp: the rewrites, stubs and refusals of the header over the engine's
// tokens (cuda_token_scanner.hpp), applied as edits to the text at the end so offsets stay those
// of the input.
#include "host/cuda_source_rewrite.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "host/function_bodies.hpp"

namespace metrale::host {
namespace {

struct Edit {
  std::size_t begin;
  std::size_t end;
  std::string text;
};

// What a stubbed body keeps of its text: its newlines, and its line markers whole (an #include
// inside a body), so every line after it is still named as the compiler first saw it.
std::string lines_and_markers(std::string_view body) {
  std::string kept;
  for (std::size_t at = 0; at < body.size();) {
    std::size_t end = body.find('\n', at);
    const bool last = end == std::string_view::npos;
    end = last ? body.size() : end;
    const std::string_view line = body.substr(at, end - at);
    const std::size_t first = line.find_first_not_of(" \t");
    // A marker mid-line is not one; the body's first line starts after its '{'.
    if (at > 0 && first != std::string_view::npos && line[first] == '#') {
      kept.append(line);
    }
    if (!last) {
      kept.push_back('\n');
    }
    at = end + 1;
  }
  return kept;
}

class Rewriter {
 public:
  Rewriter(std::string_view text, const ScannedUnit& scanned)
      : text_(text),
        tokens_(scanned.tokens),
        files_(scanned.files),
        bodies_(find_function_bodies(text, scanned.tokens)) {}

  void run(std::span<const FailedLine> failed) {
    for (const FailedLine& line : failed) {
      place(line);
    }
    for (std::size_t i = 0; i < tokens_.size(); ++i) {
      const std::string_view word = spelling(i);
      if (tokens_[i].kind == TokenKind::kPunctuator) {
        if (word == "<<<") {
          refuse(i, "a kernel launch inside a kernel (<<<...>>>, dynamic parallelism)");
        } else if (word == "{") {
          scopes_.push_back(i);
        } else if (word == "}" && !scopes_.empty()) {
          scopes_.pop_back();
        }
        continue;
      }
      if (tokens_[i].kind != TokenKind::kIdentifier) {
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
    out.unplaced = std::move(unplaced_);
    if (unit_refused_) {
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
    // A stubbed body's own edits go with it.
    for (const auto& [body, index] : stubs_) {
      const std::size_t from = tokens_[body->open].end;
      const std::size_t to = tokens_[body->close].begin;
      std::erase_if(edits_, [&](const Edit& edit) { return edit.begin >= from && edit.end <= to; });
      edits_.push_back({from, to,
                        fmt::format(" void {0}{1}(); {0}{1}(); __builtin_unreachable(); {2}", kUnavailableStubPrefix,
                                    index, lines_and_markers(text_.substr(from, to - from)))});
    }
    out.stubbed = std::move(stubbed_);
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
  // A construct the host cannot run: its function's stub when it stands in one's body, else the
  // unit's refusal (which then lists every construct, in a body or not).
  void refuse(std::size_t i, std::string_view construct) {
    std::string named = fmt::format("{} at {}", construct, where(i));
    if (std::find(refusals_.begin(), refusals_.end(), named) != refusals_.end()) {
      return;
    }
    if (const FunctionBody* body = body_holding(bodies_, i)) {
      stub(*body, named);
    } else {
      unit_refused_ = true;
    }
    refusals_.push_back(std::move(named));
  }

  void stub(const FunctionBody& body, const std::string& reason, bool from_compiler = false) {
    constexpr std::ptrdiff_t kReasons = 3;  // per function; the first is what the engine fixes first
    const auto [at, added] = stubs_.emplace(&body, stubbed_.size());
    if (added) {
      stubbed_.push_back({body.name, where(body.name_token), reason, from_compiler});
      return;
    }
    StubbedFunction& function = stubbed_[at->second];
    function.from_compiler = function.from_compiler || from_compiler;
    if (function.reason.find(reason) == std::string::npos &&
        std::count(function.reason.begin(), function.reason.end(), ';') + 1 < kReasons) {
      function.reason += "; " + reason;
    }
  }

  // A line the compiler failed on: the function whose body's lines hold it is stubbed (the
  // compiler's column is of the rewritten text, so the line, not a token, is what is matched: a
  // one-line function's error stands on its name's line).
  void place(const FailedLine& line) {
    const FunctionBody* body = body_on_line(line.file, line.line);
    for (std::size_t i = 0; body == nullptr && i < line.inner.size(); ++i) {
      body = body_on_line(line.inner[i].file, line.inner[i].line);
    }
    if (body == nullptr) {
      unplaced_.push_back(line);
      return;
    }
    stub(*body, line.reason, true);
  }

  [[nodiscard]] const FunctionBody* body_on_line(const std::string& name, std::uint32_t line) const {
    const auto file = std::find(files_.begin(), files_.end(), name);
    if (file == files_.end()) {
      return nullptr;
    }
    const auto index = static_cast<std::uint32_t>(file - files_.begin());
    const auto body = std::find_if(bodies_.begin(), bodies_.end(), [&](const FunctionBody& b) {
      const Token& open = tokens_[b.open];
      const Token& close = tokens_[b.close];
      return open.file == index && close.file == index && open.line <= line && line <= close.line;
    });
    return body == bodies_.end() ? nullptr : &*body;
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
      if (i > 1 && tokens_[i - 2].kind == TokenKind::kIdentifier) {
        if (!is(i - 2, "std")) {
          return;  // another namespace's printf
        }
        begin = tokens_[i - 2].begin;
      } else {
        begin = tokens_[i - 1].begin;
      }
    }
    // `std\n::\nprintf` is one call: the lines between its tokens stay.
    const auto newlines = std::count(text_.begin() + static_cast<std::ptrdiff_t>(begin),
                                     text_.begin() + static_cast<std::ptrdiff_t>(tokens_[i].end), '\n');
    edits_.push_back(
        {begin, tokens_[i].end,
         "::metrale::host::detail::kernel_printf" + std::string(static_cast<std::size_t>(newlines), '\n')});
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
    // No literal belongs in one (a raw string would carry its newlines into the edit).
    const bool literal =
        std::any_of(kept.begin(), kept.end(), [&](std::size_t i) { return tokens_[i].kind == TokenKind::kLiteral; });
    const auto bracket = std::find_if(kept.begin(), kept.end(), [&](std::size_t i) { return spelling(i) == "["; });
    const bool shaped = !literal && bracket != kept.begin() && bracket != kept.end() && bracket - kept.begin() >= 2 &&
                        tokens_[*(bracket - 1)].kind == TokenKind::kIdentifier && bracket + 1 != kept.end() &&
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
  std::vector<FunctionBody> bodies_;
  std::vector<std::string> refusals_;                 // every construct named, in source order
  bool unit_refused_ = false;                         // one stands outside any function's body
  std::map<const FunctionBody*, std::size_t> stubs_;  // body -> its index in stubbed_
  std::vector<StubbedFunction> stubbed_;
  std::vector<FailedLine> unplaced_;
  std::size_t declarations_ = 0;
  std::vector<std::size_t> scopes_;                         // the open braces, innermost last
  std::set<std::pair<std::size_t, std::string>> declared_;  // (innermost brace, name) rewritten
};

}  // namespace

CudaSourceRewrite rewrite_cuda_source(std::string_view preprocessed, const SourceNameFn& source_name,
                                      std::span<const FailedLine> failed) {
  const ScannedUnit scanned = scan_engine_tokens(preprocessed, source_name);
  Rewriter rewriter(preprocessed, scanned);
  rewriter.run(failed);
  return rewriter.result();
}

}  // namespace metrale::host
