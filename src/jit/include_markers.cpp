// include_markers.cpp: the marker text and its parsing out of NVRTC's log (blocks of lines
// separated by a blank line, a marker block led by "#warning directive: METRALE_INCLUDED N").
#include "jit/include_markers.hpp"

#include <charconv>

namespace metrale {
namespace {

constexpr std::string_view kMarkerWord = "METRALE_INCLUDED ";
constexpr std::string_view kMarkerDiagnostic = "#warning directive: METRALE_INCLUDED ";
constexpr std::string_view kSuppressRemark = "Remark: The warnings can be suppressed";

// The log split after each blank line, so joining the blocks gives the log back.
std::vector<std::string_view> blocks_of(std::string_view log) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (start < log.size()) {
    const std::size_t blank = log.find("\n\n", start);
    const std::size_t stop = blank == std::string_view::npos ? log.size() : blank + 2;
    out.push_back(log.substr(start, stop - start));
    start = stop;
  }
  return out;
}

std::optional<std::size_t> marker_index(std::string_view block) {
  const std::string_view first_line = block.substr(0, block.find('\n'));
  const std::size_t at = first_line.find(kMarkerDiagnostic);
  if (at == std::string_view::npos) {
    return std::nullopt;
  }
  const std::string_view digits = first_line.substr(at + kMarkerDiagnostic.size());
  std::size_t index = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
  if (error != std::errc() || end == digits.data()) {
    return std::nullopt;
  }
  return index;
}

}  // namespace

std::string with_include_marker(std::size_t index, std::string_view text) {
  std::string out = "#ifdef METRALE_INCLUDE_MARKERS\n#warning ";
  out += kMarkerWord;
  out += std::to_string(index);
  out += "\n#endif\n#line 1\n";
  out += text;
  return out;
}

std::string with_trailing_include_marker(std::size_t index, std::string_view text) {
  std::string out(text);
  if (!out.empty() && out.back() != '\n') {
    out += '\n';
  }
  out += "#ifdef METRALE_INCLUDE_MARKERS\n#warning ";
  out += kMarkerWord;
  out += std::to_string(index);
  out += "\n#endif\n";
  return out;
}

bool include_markers_usable(const std::vector<std::string>& options) {
  for (const std::string& option : options) {
    if (option == "-w" || option == "--disable-warnings" || option.find("Werror") != std::string::npos ||
        option.find("diag-suppress") != std::string::npos || option.find("diag_suppress") != std::string::npos ||
        option.find("diag-error") != std::string::npos || option.find("diag_error") != std::string::npos) {
      return false;
    }
  }
  return true;
}

MarkedLog read_include_markers(std::string_view log) {
  MarkedLog out;
  std::vector<std::string_view> kept;
  for (const std::string_view block : blocks_of(log)) {
    if (const std::optional<std::size_t> index = marker_index(block)) {
      out.opened.insert(*index);
    } else {
      kept.push_back(block);
    }
  }
  bool other_warning = false;
  for (const std::string_view block : kept) {
    other_warning =
        other_warning || (!block.starts_with(kSuppressRemark) && block.find("warning") != std::string_view::npos);
  }
  for (const std::string_view block : kept) {
    if (!(block.starts_with(kSuppressRemark) && !other_warning && !out.opened.empty())) {
      out.log += block;
    }
  }
  return out;
}

}  // namespace metrale
