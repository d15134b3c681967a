// jit/include_markers.hpp: which sources NVRTC's preprocessor actually opened, read from the
// compile itself. NVRTC 13 has no dependency output (-M, -MD, --dependency-output are refused),
// so, as Jitify2 does, every text handed to NVRTC starts with a guarded `#warning` naming its
// index; the compile defines the guard, each opened file prints its marker once into the log,
// and the markers are parsed out of the log before anyone reads it. Pure functions.
// Invariants: a marked text keeps its line numbers (`#line 1` follows the marker) and compiles to
// the same code; markers are numbers, so no file name needs escaping; the cleaned log is the log
// without the marker diagnostics (and without NVRTC's remark on suppressing warnings when no
// other warning is left to explain).
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace metrale {

// The option that turns the markers on.
inline constexpr std::string_view kIncludeMarkerOption = "-DMETRALE_INCLUDE_MARKERS";

// `text` with marker `index` in front.
std::string with_include_marker(std::size_t index, std::string_view text);
// `text` with marker `index` at its end, and no #line: for a main source compiled with NVRTC's
// precompiled headers, whose creation a #line in the main file's leading directives disables
// (the main file always prints its marker, so where it stands does not matter).
std::string with_trailing_include_marker(std::size_t index, std::string_view text);

// Whether markers can be read back under these options: not when warnings are silenced (-w,
// --disable-warnings, a diag suppression) or made errors (-Werror), which would drop or break them.
bool include_markers_usable(const std::vector<std::string>& options);

struct MarkedLog {
  std::set<std::size_t> opened;  // the marker indices found
  std::string log;               // the log without them
};
MarkedLog read_include_markers(std::string_view log);

}  // namespace metrale
