// METRALE_HARDWARE_DIR: an existing folder replaces the embedded files; a bad one is an error.
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "hardware/hardware_loader.hpp"
#include "hardware/target_selection.hpp"
#include "metrale/error.hpp"
#include "ops/op_kernels.hpp"
#include "support/target_test_support.hpp"

namespace {

std::string shipped(const char* target) {
  std::ifstream in(std::string(METRALE_SOURCE_DIR) + "/hardware/" + target + "/HARDWARE.toml");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("METRALE_HARDWARE_DIR points the loader at a folder on disk", "[target][dir]") {
  metrale::test::TempDir dir;
  std::string hopper = shipped("hopper");
  hopper.replace(hopper.find("sm_count = 132"), 14, "sm_count = 7");
  dir.write("hopper/HARDWARE.toml", hopper);
  dir.write("generic/HARDWARE.toml", shipped("generic"));
  dir.write("README.txt", "not a target");  // plain files beside the folders are ignored

  metrale::test::ScopedEnv env(metrale::kHardwareDirEnv, dir.path().string());
  const auto targets = metrale::load_targets(metrale::ops::library_catalog());
  REQUIRE(targets.size() == 2);
  const auto* chosen = metrale::find_target(targets, "hopper");
  REQUIRE(chosen != nullptr);
  CHECK(chosen->sm_count == 7u);
  CHECK(chosen->source == (dir.path() / "hopper/HARDWARE.toml").string());
}

TEST_CASE("without METRALE_HARDWARE_DIR, or with it empty, the embedded files load", "[target][dir]") {
  for (const std::optional<std::string>& value : {std::optional<std::string>{}, std::optional<std::string>("")}) {
    metrale::test::ScopedEnv env(metrale::kHardwareDirEnv, value);
    const auto targets = metrale::load_targets(metrale::ops::library_catalog());
    CHECK(targets.size() == 5);
    CHECK(metrale::find_target(targets, "hopper")->source == "<embedded>/hopper/HARDWARE.toml");
  }
}

TEST_CASE("a bad METRALE_HARDWARE_DIR is a named error", "[target][dir]") {
  metrale::test::TempDir dir;
  SECTION("missing path") {
    const std::string missing = (dir.path() / "absent").string();
    metrale::test::ScopedEnv env(metrale::kHardwareDirEnv, missing);
    CHECK_THROWS_AS(metrale::load_targets(metrale::ops::library_catalog()), metrale::ConfigError);
    CHECK_THROWS_WITH(
        metrale::load_targets(metrale::ops::library_catalog()),
        Catch::Contains("METRALE_HARDWARE_DIR=" + missing) && Catch::Contains("not an existing directory"));
  }
  SECTION("a file, not a folder") {
    dir.write("file.toml", "x = 1");
    metrale::test::ScopedEnv env(metrale::kHardwareDirEnv, (dir.path() / "file.toml").string());
    CHECK_THROWS_WITH(metrale::load_targets(metrale::ops::library_catalog()),
                      Catch::Contains("not an existing directory"));
  }
  SECTION("a target folder without HARDWARE.toml") {
    dir.write("generic/HARDWARE.toml", shipped("generic"));
    std::filesystem::create_directories(dir.path() / "hopper");
    metrale::test::ScopedEnv env(metrale::kHardwareDirEnv, dir.path().string());
    CHECK_THROWS_WITH(metrale::load_targets(metrale::ops::library_catalog()),
                      Catch::Contains((dir.path() / "hopper").string()) && Catch::Contains("no HARDWARE.toml"));
  }
  SECTION("an empty folder") {
    metrale::test::ScopedEnv env(metrale::kHardwareDirEnv, dir.path().string());
    CHECK_THROWS_WITH(metrale::load_targets(metrale::ops::library_catalog()),
                      Catch::Contains("no <target>/HARDWARE.toml"));
  }
  SECTION("a malformed file names its path on disk") {
    dir.write("generic/HARDWARE.toml", shipped("generic"));
    dir.write("hopper/HARDWARE.toml", shipped("hopper") + "bogus = 1\n");
    metrale::test::ScopedEnv env(metrale::kHardwareDirEnv, dir.path().string());
    CHECK_THROWS_WITH(metrale::load_targets(metrale::ops::library_catalog()),
                      Catch::StartsWith((dir.path() / "hopper/HARDWARE.toml").string() + ":") &&
                          Catch::Contains("bogus: unknown key"));
  }
}
