// host/compile_log_locations.cpp: a line-by-line reading of the diagnostics. GCC prints an error's
// instantiation chain before it ("In instantiation of ...", then "file:line:col:   required from
// ..." lines, innermost first); Clang prints it after ("file:line:col: note: in instantiation of
// ... requested here", innermost first). Either way the last chain line is the outermost.
#include "host/compile_log_locations.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <optional>
#include <regex>
#include <string>

namespace metrale::host {
namespace {

struct Location {
  std::string path;
  std::uint32_t line = 0;
};

struct LoggedError {
  Location at;
  std::string text;
  std::vector<Location> chain_before;  // GCC's "required from", innermost first
  std::vector<Location> chain_after;   // Clang's "requested here", innermost first
};

// A line number or stub index as the log spells it; 0 (no line, no match) when it overflows.
std::uint32_t number(const std::string& digits) {
  std::uint32_t value = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  return error == std::errc() && end == digits.data() + digits.size() ? value : 0;
}

std::string without(std::string text, std::string_view prefix) {
  if (prefix.empty()) {
    return text;
  }
  for (std::size_t at = text.find(prefix); at != std::string::npos; at = text.find(prefix, at)) {
    text.erase(at, prefix.size());
  }
  return text;
}

// Each line of `log`, without its newline.
template <typename Fn>
void for_each_line(std::string_view log, Fn&& fn) {
  for (std::size_t from = 0; from < log.size();) {
    std::size_t end = log.find('\n', from);
    end = end == std::string_view::npos ? log.size() : end;
    fn(log.substr(from, end - from));
    from = end + 1;
  }
}

std::vector<LoggedError> logged_errors(std::string_view log) {
  // Matched against a line's head only: libstdc++'s regex recurses once per character matched,
  // and a template's name in a log line can run to many kilobytes.
  constexpr std::size_t kHead = 512;
  static const std::regex kDiagnostic(R"(^(.+?):(\d+):(?:\d+:)? (fatal error|error|note|warning): )");
  static const std::regex kRequiredFrom(R"(^(.+?):(\d+):(?:\d+:)?\s+required (from|by) )");
  std::vector<LoggedError> errors;
  std::vector<Location> pending;  // GCC's chain lines since the last error or context line
  bool after_error = false;       // Clang's notes belong to the error just read
  for_each_line(log, [&](std::string_view whole) {
    const std::string line(whole.substr(0, kHead));
    std::smatch m;
    if (std::regex_search(line, m, kRequiredFrom)) {
      pending.push_back({m[1].str(), number(m[2].str())});
      after_error = false;
    } else if (std::regex_search(line, m, kDiagnostic)) {
      const Location at{m[1].str(), number(m[2].str())};
      const std::string kind = m[3].str();
      if (kind == "error" || kind == "fatal error") {
        errors.push_back({at, std::string(whole), std::move(pending), {}});
        pending.clear();
        after_error = true;
      } else if (kind == "note" && after_error && whole.find("requested here") != std::string_view::npos) {
        errors.back().chain_after.push_back(at);
      } else if (kind == "warning") {
        after_error = false;
      }
    } else if (whole.ends_with(":") &&
               (whole.find(": In ") != std::string_view::npos || whole.find(": At ") != std::string_view::npos)) {
      pending.clear();  // "k.cu: In function 'f':", "k.cu: In instantiation of ...:" start a new chain
      after_error = false;
    }
  });
  return errors;
}

}  // namespace

std::vector<FailedLine> failed_engine_lines(std::string_view log, const SourceNameFn& source_name,
                                            std::string_view path_prefix) {
  std::vector<FailedLine> failed;
  for (const LoggedError& error : logged_errors(log)) {
    // The chain outermost first (both compilers list it innermost first), then the error's line.
    const std::vector<Location>& listed = error.chain_after.empty() ? error.chain_before : error.chain_after;
    std::vector<const Location*> chain;
    for (auto it = listed.rbegin(); it != listed.rend(); ++it) {
      chain.push_back(&*it);
    }
    chain.push_back(&error.at);
    const std::optional<std::string> file = source_name(chain.front()->path);
    if (!file) {
      continue;  // the unit's own wrapper (the requested kernel's instantiation), the prelude: not the engine's
    }
    std::string reason = without(error.text, path_prefix);
    if (chain.size() > 1) {  // the line that asked for the instantiation, named too
      reason += fmt::format(" (instantiated at {}:{})", *file, chain.front()->line);
    }
    FailedLine line{*file, chain.front()->line, std::move(reason), {}};
    for (std::size_t i = 1; i < chain.size(); ++i) {
      if (std::optional<std::string> inner = source_name(chain[i]->path)) {
        line.inner.push_back({std::move(*inner), chain[i]->line});
      }
    }
    const bool known = std::any_of(failed.begin(), failed.end(), [&](const FailedLine& seen) {
      return seen.file == line.file && seen.line == line.line && seen.reason == line.reason;
    });
    if (!known) {
      failed.push_back(std::move(line));
    }
  }
  return failed;
}

std::vector<std::size_t> unavailable_stubs_called(std::string_view log) {
  std::vector<std::size_t> called;
  // GNU ld: "undefined reference to `ns::metrale_host_unavailable_3()'"; lld: "undefined symbol: ...".
  for_each_line(log, [&](std::string_view line) {
    if (line.find("undefined reference to") == std::string_view::npos &&
        line.find("undefined symbol:") == std::string_view::npos) {
      return;
    }
    for (std::size_t at = line.find(kUnavailableStubPrefix); at != std::string_view::npos;
         at = line.find(kUnavailableStubPrefix, at + 1)) {
      const std::size_t digits = at + kUnavailableStubPrefix.size();
      std::size_t end = digits;
      while (end < line.size() && line[end] >= '0' && line[end] <= '9') {
        ++end;
      }
      if (end == digits) {
        continue;
      }
      const std::size_t index = number(std::string(line.substr(digits, end - digits)));
      if (std::find(called.begin(), called.end(), index) == called.end()) {
        called.push_back(index);
      }
    }
  });
  std::sort(called.begin(), called.end());
  return called;
}

}  // namespace metrale::host
