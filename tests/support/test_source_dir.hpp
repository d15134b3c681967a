// test_source_dir.hpp: the checkout a test reads its data files from. The one place a test that
// may run on a device machine names the build's source folder (tests/scripts/
// gpu_tests_read_no_source_path.py allows it here only): METRALE_TEST_SOURCE_DIR when set (the
// device check sets it: its binaries were built in another folder, on another machine), else the
// source folder of the build.
#pragma once

#include <cstdlib>
#include <string>

namespace metrale::test {

inline std::string test_source_dir() {
  const char* moved = std::getenv("METRALE_TEST_SOURCE_DIR");
  return moved != nullptr && *moved != '\0' ? std::string(moved) : std::string(METRALE_SOURCE_DIR);
}

}  // namespace metrale::test
