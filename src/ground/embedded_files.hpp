// ground/embedded_files.hpp: files built into the library at compile time, so an
// installed library needs neither the source tree nor a data directory.
// Invariant: the generated tables are sorted by name; names are relative paths
// ("ba_gates.cuh", "hopper/HARDWARE.toml").
#pragma once

#include <span>
#include <string_view>

namespace metrale {

struct EmbeddedFile {
  std::string_view name;
  std::string_view text;
};

// The kernel templates (templates/*.cuh and src/ops/<op>/*.cuh), by file name.
std::span<const EmbeddedFile> embedded_templates();
// hardware/<target>/HARDWARE.toml, by "<target>/HARDWARE.toml".
std::span<const EmbeddedFile> embedded_hardware();

}  // namespace metrale
