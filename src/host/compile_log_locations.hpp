// host/compile_log_locations.hpp: what the host JIT reads back from a failed compile of a unit
// (GCC's and Clang's diagnostic formats): the engine's lines the compiler failed on, so their
// functions can be stubbed and the unit compiled again (cuda_source_rewrite.hpp), and the stubs a
// failed link was missing, so the kernel that reached them is refused naming them.
// For an error met while instantiating a template, the line taken is the outermost of the
// instantiation's engine lines (GCC's last "required from", Clang's last "requested here"): the
// function that asked for the instantiation is stubbed, not the template every other caller shares.
// Invariants: pure; lines outside the engine's files (the prelude, the unit's own wrapper, system
// headers) are never returned: an error whose outermost line is there is not the engine's to stub.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "host/cuda_source_rewrite.hpp"

namespace metrale::host {

// One per error of `log` whose outermost location is an engine file's line; the reason is the
// error's own line of the log, with `path_prefix` (the work folder) taken out of it, and, for an
// instantiation, " (instantiated at k.cu:N)"; `inner` the chain's other engine lines, outermost
// first (for an instantiation asked for outside any function: an explicit one).
std::vector<FailedLine> failed_engine_lines(std::string_view log, const SourceNameFn& source_name,
                                            std::string_view path_prefix);

// The indices N of the metrale_host_unavailable_<N> a link reported undefined, ascending, once each.
std::vector<std::size_t> unavailable_stubs_called(std::string_view log);

}  // namespace metrale::host
