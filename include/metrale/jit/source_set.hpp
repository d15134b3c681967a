// metrale/jit/source_set.hpp: the named CUDA C++ texts a registry compiles from.
// Every source of a set is handed to NVRTC as a header, so templates #include each other by
// name (NVRTC matches the name as written, subdirectory and all). A host engine adds its own
// sources beside the library's embedded templates.
// Invariants: names are unique (adding a name again replaces its text); a source's digest
// covers its text and, transitively, every source of the set its #include lines name, so
// editing a header changes the cache key of everything that includes it. That scan is checked
// by the preprocessor on every compile (jit/include_markers.hpp): a kernel whose compile opened
// a member the scan missed (a macro include) is never stored under the scan's key.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "metrale/environment.hpp"

namespace metrale {

class SourceSet {
 public:
  // Adds (or replaces) one named source, e.g. add_source("my_kernels.cuh", text). The name is a
  // name, never a path: ArgumentError (naming it and the rule) when source_name_problem() says so.
  void add_source(std::string name, std::string text);

  // Adds templates/*.cuh: from METRALE_TEMPLATE_DIR when it is set (a ConfigError names the
  // variable and the path when it is not an existing directory), else the embedded copies.
  void add_embedded_templates(const EnvLookup& env = process_environment());
  // Adds every *.cuh file under one directory, a file in a subdirectory by its relative path
  // ("sub/x.cuh", as `#include "sub/x.cuh"` names it); ConfigError when it is not a readable
  // directory.
  void add_directory(const std::string& directory);

  [[nodiscard]] const std::string* find(std::string_view name) const;
  [[nodiscard]] bool contains(std::string_view name) const { return find(name) != nullptr; }
  [[nodiscard]] std::vector<std::string> names() const;
  [[nodiscard]] std::size_t size() const { return sources_.size(); }
  [[nodiscard]] const std::map<std::string, std::string, std::less<>>& sources() const { return sources_; }

  // Hex digest of `name` and every set member it #includes (transitively); nullopt when
  // `name` is not in the set.
  [[nodiscard]] std::optional<std::string> digest(std::string_view name) const;
  // Whether `name` or a source it includes (transitively) names a file that is not in the set,
  // e.g. <cuda_bf16.h>: only such sources are compiled with the toolkit's include directory.
  [[nodiscard]] bool reaches_outside(std::string_view name) const;
  // The members digest(name) covers: `name` and the members its #include lines name, sorted.
  [[nodiscard]] std::vector<std::string> digested_members(std::string_view name) const;

 private:
  std::map<std::string, std::string, std::less<>> sources_;
};

// Why `name` cannot name a source ("" when it can): a source is text known by a name as an
// #include line writes it ("sub/x.cuh"), so a name that is empty, starts with '/', has a ".."
// part, or holds NUL, another control character, '"' or '\\' would reach outside the set (a
// compiler given such an #include reads that file from disk, not the registered text) or out of
// the #include line. Every way to register a source (C++, C ABI, Python) goes through
// SourceSet::add_source, and the host JIT checks its request's names again. Pure.
std::string source_name_problem(std::string_view name);

// SourceSet::digest over a plain map of named sources (a LoadRequest's), without copying it.
std::optional<std::string> source_digest(const std::map<std::string, std::string, std::less<>>& sources,
                                         std::string_view name);

// The file names a source #includes ("x.cuh" from `#include "x.cuh"` or `#include <x.cuh>`),
// in order of appearance. Pure; a textual scan (a commented-out include still counts, which
// only makes a digest more conservative).
std::vector<std::string> included_names(std::string_view text);

}  // namespace metrale
