// host/builtin_source.hpp: whether a load names the very source a built-in host instantiation
// was compiled from. The built-ins (builtin_kernels.cpp) are the embedded templates compiled
// into the library; a load whose source, with every member it includes, differs from the
// embedded one (METRALE_TEMPLATE_DIR, an engine's replacement of a library template) is not
// theirs, and the host JIT compiles what it was given (what you give it is what runs).
// Invariant: the comparison is SourceSet::digest's, the same the NVRTC keys use, so a source
// runs from a built-in on the host exactly when its NVRTC key equals the embedded template's.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "metrale/gpu/gpu_backend.hpp"

namespace metrale::host {

// The digest of the source a load names within the sources it gives; nullopt when it gives
// none or its set lacks that source (the load then has nothing to override with).
std::optional<std::string> given_source_digest(const LoadRequest& request);

// The digest of `source` among the embedded templates (the set is built once per process);
// nullopt when no embedded template has that name.
std::optional<std::string> embedded_source_digest(std::string_view source);

}  // namespace metrale::host
