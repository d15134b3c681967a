// dynamic_shared_source.hpp: the NVRTC source sets of host test kernels that include the
// arithmetic header (tests/data/host/dynamic_shared.cuh, cluster.cuh, which the host tests
// compile directly): the embedded templates plus that file, its include of the arithmetic header
// renamed to the set's name. The files are read from test_source_dir() (the device check's checkout).
#pragma once

#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>

#include "metrale/jit/source_set.hpp"
#include "support/test_source_dir.hpp"

namespace metrale::test {

inline constexpr const char* kDynamicSharedSource = "dynamic_shared.cuh";
inline constexpr const char* kDynamicSharedRotate = "metrale_test::dynamic_shared_rotate";
inline constexpr const char* kClusterSource = "cluster.cuh";

// `file`, a kernel file in tests/data/host/, as source `file` of the set.
inline SourceSet host_test_kernel_sources(const std::string& file) {
  SourceSet sources;
  sources.add_embedded_templates([](const char*) { return std::optional<std::string>(); });
  const std::string path = test_source_dir() + "/tests/data/host/" + file;
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::string kernel = text.str();
  const std::string include = "#include \"../../../templates/metrale_arith.cuh\"";
  const std::size_t at = kernel.find(include);
  if (at == std::string::npos) {
    throw std::runtime_error(path + " is missing or lacks the line: " + include);
  }
  kernel.replace(at, include.size(), "#include \"metrale_arith.cuh\"");
  sources.add_source(file, kernel);
  return sources;
}

inline SourceSet dynamic_shared_sources() { return host_test_kernel_sources(kDynamicSharedSource); }

}  // namespace metrale::test
