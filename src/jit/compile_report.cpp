// compile_report.cpp: parsing of ptxas -v resource lines and NVRTC diagnostics.
// ptxas prints, per entry:  "Compiling entry function '<name>' for 'sm_90'", then
// "N bytes stack frame, N bytes spill stores, N bytes spill loads", then
// "Used N registers, used N barriers, N bytes smem, N bytes cmem[0]"; the order of the
// comma-separated items varies between versions, so each item is matched by its words.
#include "jit/compile_report.hpp"

#include <algorithm>
#include <charconv>
#include <regex>

namespace metrale {
namespace {

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = text.find('\n', start);
    const std::size_t stop = end == std::string_view::npos ? text.size() : end;
    lines.push_back(text.substr(start, stop - start));
    if (end == std::string_view::npos) {
      break;
    }
    start = end + 1;
  }
  return lines;
}

int leading_number(std::string_view item) {
  while (!item.empty() && item.front() == ' ') {
    item.remove_prefix(1);
  }
  int value = 0;
  std::from_chars(item.data(), item.data() + item.size(), value);
  return value;
}

// The first run of digits in an item: "ptxas  .  16 bytes stack frame" -> 16.
int first_number(std::string_view item) {
  const std::size_t digit = item.find_first_of("0123456789");
  return digit == std::string_view::npos ? 0 : leading_number(item.substr(digit));
}

// Applies every "N <unit>" item of one comma-separated ptxas line to `out`.
void apply_items(std::string_view line, KernelResources& out) {
  std::size_t start = line.find(':');
  start = start == std::string_view::npos ? 0 : start + 1;  // "ptxas info    : " carries no number
  while (start < line.size()) {
    std::size_t end = line.find(',', start);
    if (end == std::string_view::npos) {
      end = line.size();
    }
    std::string_view item = line.substr(start, end - start);
    if (item.find("registers") != std::string_view::npos) {
      out.registers = first_number(item);
    } else if (item.find("spill stores") != std::string_view::npos) {
      out.spill_stores = first_number(item);
    } else if (item.find("spill loads") != std::string_view::npos) {
      out.spill_loads = first_number(item);
    } else if (item.find("stack frame") != std::string_view::npos) {
      out.stack_bytes = first_number(item);
    } else if (item.find("smem") != std::string_view::npos) {
      out.shared_bytes = first_number(item);
    }
    start = end + 1;
  }
}

}  // namespace

std::vector<KernelResources> parse_ptxas_resources(std::string_view log) {
  std::vector<KernelResources> out;
  static constexpr std::string_view kEntry = "Compiling entry function '";
  for (std::string_view line : split_lines(log)) {
    if (const auto at = line.find(kEntry); at != std::string_view::npos) {
      const std::size_t name_start = at + kEntry.size();
      const std::size_t name_end = line.find('\'', name_start);
      if (name_end != std::string_view::npos) {
        out.push_back(KernelResources{.entry = std::string(line.substr(name_start, name_end - name_start))});
      }
      continue;
    }
    if (out.empty() || line.find("ptxas") != 0) {
      continue;
    }
    if (line.find("registers") != std::string_view::npos || line.find("stack frame") != std::string_view::npos) {
      apply_items(line, out.back());
    }
  }
  return out;
}

std::vector<SourceDiagnostic> parse_diagnostics(std::string_view log, const SourceSet& sources) {
  static const std::regex kDiagnostic(R"(^(.+)\((\d+)\): (error|warning|catastrophic error)[^:]*: (.*)$)");
  std::vector<SourceDiagnostic> out;
  for (std::string_view line : split_lines(log)) {
    std::match_results<std::string_view::const_iterator> match;
    if (!std::regex_match(line.begin(), line.end(), match, kDiagnostic)) {
      continue;
    }
    SourceDiagnostic diagnostic;
    diagnostic.file = match[1].str();
    diagnostic.line = leading_number(std::string_view(&*match[2].first, static_cast<std::size_t>(match[2].length())));
    diagnostic.severity = match[3].str();
    diagnostic.message = match[4].str();
    if (const std::string* text = sources.find(diagnostic.file); text != nullptr && diagnostic.line > 0) {
      const std::vector<std::string_view> lines = split_lines(*text);
      if (static_cast<std::size_t>(diagnostic.line) <= lines.size()) {
        diagnostic.quoted_line = std::string(lines[static_cast<std::size_t>(diagnostic.line) - 1]);
      }
    }
    out.push_back(std::move(diagnostic));
  }
  return out;
}

std::string annotated_log(std::string_view log, const std::vector<SourceDiagnostic>& diagnostics) {
  std::string out(log);
  for (const SourceDiagnostic& diagnostic : diagnostics) {
    if (diagnostic.quoted_line.empty()) {
      continue;
    }
    out += "\n  " + diagnostic.file + ":" + std::to_string(diagnostic.line) + ": " + diagnostic.quoted_line;
  }
  return out;
}

std::string first_error_line(std::string_view log) {
  std::string_view first;
  std::size_t start = 0;
  while (start < log.size()) {
    const std::size_t end = std::min(log.find('\n', start), log.size());
    const std::string_view line = log.substr(start, end - start);
    if (line.find("error") != std::string_view::npos) {
      return std::string(line);
    }
    if (first.empty() && line.find_first_not_of(" \t\r") != std::string_view::npos) {
      first = line;
    }
    start = end + 1;
  }
  return first.empty() ? std::string("(the compiler left no log)") : std::string(first);
}

std::string compile_failure_reason(std::string_view log) {
  std::string reason = "compile failed: " + first_error_line(log);
  if (log.find_first_not_of(" \t\r\n") != std::string_view::npos) {
    reason += '\n';
    reason.append(log);
  }
  return reason;
}

}  // namespace metrale
