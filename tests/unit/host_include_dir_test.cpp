// host_include_dir_test.cpp: the host JIT's headers are found relative to the binary running
// (src/host/host_include_dir.hpp), never through a path of the source tree: the candidate folders
// for a wheel, an install (lib, lib/<multiarch>, bin) and a build tree; this test executable is
// found, and its headers are the build tree's staged copy; METRALE_INCLUDE_DIR comes first.
#include "host/host_include_dir.hpp"

#include <catch2/catch.hpp>
#include <fstream>

#include "support/temp_dir.hpp"

using metrale::host::host_include_candidates;
using Paths = std::vector<std::filesystem::path>;

TEST_CASE("the host JIT's include folders sit beside the binary it runs in", "[host][jit][install]") {
  // A wheel: site-packages/metrale/libmetrale.so beside metrale/include.
  CHECK(host_include_candidates("/venv/site/metrale/libmetrale.so", "/venv/site/metrale/libmetrale.so", "../include") ==
        Paths{"/venv/site/metrale/include", "/venv/site/include"});
  // An install with a multiarch libdir, reached through a link elsewhere.
  CHECK(host_include_candidates("/usr/lib/libmetrale.so.0", "/opt/m/lib/x86_64-linux-gnu/libmetrale.so.0.1.0",
                                "../../include") == Paths{"/usr/lib/include", "/include", "/usr/include",
                                                          "/opt/m/lib/x86_64-linux-gnu/include", "/opt/m/include",
                                                          "/opt/m/lib/include"});
  // An executable in prefix/bin linking the static library.
  CHECK(host_include_candidates("/p/bin/engine", {}, "../include") == Paths{"/p/bin/include", "/p/include"});
  CHECK(host_include_candidates({}, {}, "../include").empty());
}

TEST_CASE("this test finds the build tree's copy of the headers, not the source tree's", "[host][jit][install]") {
  const std::filesystem::path self = metrale::host::loaded_binary();
  REQUIRE_FALSE(self.empty());
  CHECK(std::filesystem::equivalent(self, "/proc/self/exe"));  // statically linked: the executable
  const auto none = [](const char*) -> std::optional<std::string> { return std::nullopt; };
  const std::optional<std::filesystem::path> found = metrale::host::host_jit_include_dir(none);
  REQUIRE(found.has_value());
  CHECK(std::filesystem::equivalent(*found, std::filesystem::path(METRALE_BINARY_DIR) / "include"));
  CHECK_FALSE(std::filesystem::equivalent(*found, std::filesystem::path(METRALE_SOURCE_DIR) / "include"));

  // METRALE_INCLUDE_DIR overrides, when it holds the prelude; else the search goes on.
  const metrale::test::TempDir other("metrale-include");
  const auto to = [&](const char* name) -> std::optional<std::string> {
    return std::string_view(name) == "METRALE_INCLUDE_DIR" ? std::optional<std::string>(other.path().string())
                                                           : std::nullopt;
  };
  CHECK(metrale::host::host_jit_include_dir(to) == found);
  std::filesystem::create_directories(other.path() / "metrale/host");
  std::ofstream(other.path() / metrale::host::kPreludeHeader) << "// a prelude\n";
  CHECK(metrale::host::host_jit_include_dir(to) == other.path());
  CHECK(metrale::host::host_jit_include_candidates(to).front() == other.path());
}
