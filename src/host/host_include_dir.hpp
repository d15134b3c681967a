// host/host_include_dir.hpp: where the headers the host JIT compiles against are
// (metrale/host/cuda_host_prelude.hpp and everything it includes), found relative to the binary
// the library's code was loaded from, so an install, a wheel and a build tree all work moved
// anywhere, and no build-time path is baked into the library.
// Invariant: the folders tried are, in order: METRALE_INCLUDE_DIR (an override), then for the
// binary holding this code (libmetrale.so, or an executable linking the static library), as
// loaded and as its links resolve: <its folder>/include (the wheel's metrale/ folder beside
// libmetrale.so, a build tree's staged copy), <its folder>/<libdir to includedir> (an install:
// prefix/lib -> prefix/include, also for lib/<multiarch>) and <its folder>/../include (an
// executable in prefix/bin, a build tree's tools/ and tests/); the first that holds the prelude.
#pragma once

#include <filesystem>
#include <optional>
#include <string_view>
#include <vector>

#include "metrale/environment.hpp"

namespace metrale::host {

// The prelude's path below an include folder.
inline constexpr std::string_view kPreludeHeader = "metrale/host/cuda_host_prelude.hpp";

// The folders tried for a binary at `binary` (as loaded) and `resolved` (its links followed),
// in order, without duplicates; `libdir_to_include` is the install's relative path from its
// library folder to its include folder ("../include"). Pure.
std::vector<std::filesystem::path> host_include_candidates(const std::filesystem::path& binary,
                                                           const std::filesystem::path& resolved,
                                                           std::string_view libdir_to_include);

// The file this code was loaded from (the shared library holding it, or the executable when it
// is linked statically); empty when the loader cannot say.
std::filesystem::path loaded_binary();

// The first folder holding the prelude: METRALE_INCLUDE_DIR, then host_include_candidates for
// loaded_binary(); nullopt when none does.
std::optional<std::filesystem::path> host_jit_include_dir(const EnvLookup& env);

// The folders host_jit_include_dir looks in, for the reason when none holds the prelude.
std::vector<std::filesystem::path> host_jit_include_candidates(const EnvLookup& env);

}  // namespace metrale::host
