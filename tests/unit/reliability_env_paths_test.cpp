// reliability_env_paths_test.cpp: paths from the environment (METRALE_CACHE_DIR,
// METRALE_TEMPLATE_DIR, METRALE_HARDWARE_DIR) that are relative, missing, a file, or full of odd
// characters. The documented behaviour, each case pinned here:
// - METRALE_CACHE_DIR must be absolute (a relative one would follow the working directory into
//   somebody else's tree): memory only, with the reason; nothing is created. A missing
//   directory is created private (0700); a file is refused with its path.
// - METRALE_TEMPLATE_DIR and METRALE_HARDWARE_DIR are developer overrides read once at start-up:
//   a relative value resolves against the working directory; a missing path or a file is a
//   ConfigError that quotes the variable and the value verbatim.
// - Odd characters (spaces, quotes, braces, %, $, tab, newline, UTF-8) are just bytes: an
//   existing directory works, a missing one is reported with the exact value.
// Every variable and the working directory are restored after each test.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "hardware/hardware_loader.hpp"
#include "hardware/target_selection.hpp"
#include "jit/disk_cache.hpp"
#include "metrale/error.hpp"
#include "metrale/jit/source_set.hpp"
#include "ops/op_kernels.hpp"
#include "support/target_test_support.hpp"

using namespace metrale;
using metrale::test::ScopedEnv;
using metrale::test::TempDir;

namespace {

// A name no shell or format string should get wrong.
const std::string kOddName = "odd dir \xc3\xbc {} %s %n $HOME 'q' \"dq\" ;\t-x\nline2";

// Changes the working directory for one test and restores it.
class ScopedCwd {
 public:
  explicit ScopedCwd(const std::filesystem::path& dir) : previous_(std::filesystem::current_path()) {
    std::filesystem::current_path(dir);
  }
  ~ScopedCwd() {
    std::error_code ignored;
    std::filesystem::current_path(previous_, ignored);
  }
  ScopedCwd(const ScopedCwd&) = delete;
  ScopedCwd& operator=(const ScopedCwd&) = delete;

 private:
  std::filesystem::path previous_;
};

std::string shipped_hardware(const char* target) {
  std::ifstream in(std::string(METRALE_SOURCE_DIR) + "/hardware/" + target + "/HARDWARE.toml");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_hardware_dir(const TempDir& temp, const std::string& relative) {
  temp.write(relative + "/hopper/HARDWARE.toml", shipped_hardware("hopper"));
  temp.write(relative + "/generic/HARDWARE.toml", shipped_hardware("generic"));
}

EntryKey sample_key() {
  return EntryKey{"ssm_ba_gates", "b256l64", "sm_90", "13-0", "-std=c++17", "0123456789abcdef", ""};
}

mode_t mode_of(const std::filesystem::path& path) {
  struct stat info {};
  REQUIRE(::stat(path.c_str(), &info) == 0);
  return info.st_mode & 07777;
}

}  // namespace

TEST_CASE("reliability: METRALE_CACHE_DIR relative is memory only with the reason, nothing created",
          "[reliability][env]") {
  TempDir temp;
  ScopedCwd cwd(temp.path());
  for (const std::string value : {"relative/cache", "./cache", "../cache", "~/cache"}) {
    INFO(value);
    ScopedEnv env("METRALE_CACHE_DIR", value);
    DiskCache cache = DiskCache::open();
    CHECK_FALSE(cache.enabled());
    CHECK_THAT(cache.disabled_reason(),
               Catch::Contains("METRALE_CACHE_DIR='" + value + "'") && Catch::Contains("is not an absolute path"));
    CHECK_FALSE(cache.store(sample_key(), {{"cubin", "bytes"}}));
    CHECK_FALSE(cache.load(sample_key()).has_value());
  }
  CHECK(std::filesystem::is_empty(temp.path()));
}

TEST_CASE("reliability: METRALE_CACHE_DIR missing is created private, a file is refused by path",
          "[reliability][env]") {
  TempDir temp;
  const auto nested = temp.path() / "a" / "b" / "cache";
  {
    ScopedEnv env("METRALE_CACHE_DIR", nested.string());
    DiskCache cache = DiskCache::open();
    REQUIRE(cache.enabled());
    CHECK(mode_of(temp.path() / "a") == 0700);
    CHECK(mode_of(nested) == 0700);
    REQUIRE(cache.store(sample_key(), {{"cubin", "bytes"}}));
    CHECK(mode_of(nested / sample_key().file_name()) == 0600);
  }
  temp.write("plain-file", "not a directory");
  for (const auto& path : {temp.path() / "plain-file", temp.path() / "plain-file" / "below"}) {
    INFO(path.string());
    ScopedEnv env("METRALE_CACHE_DIR", path.string());
    DiskCache cache = DiskCache::open();
    CHECK_FALSE(cache.enabled());
    CHECK_THAT(cache.disabled_reason(), Catch::Contains((temp.path() / "plain-file").string()));
  }
}

TEST_CASE("reliability: a METRALE_CACHE_DIR symlink to a shared or foreign directory is refused",
          "[reliability][env]") {
  TempDir temp;
  std::filesystem::create_directory(temp.path() / "shared");
  ::chmod((temp.path() / "shared").c_str(), 0777);
  std::filesystem::create_directory_symlink(temp.path() / "shared", temp.path() / "link");
  ScopedEnv env("METRALE_CACHE_DIR", (temp.path() / "link").string());
  DiskCache cache = DiskCache::open();
  CHECK_FALSE(cache.enabled());
  CHECK_THAT(cache.disabled_reason(), Catch::Contains("writable by group or others"));
  if (::geteuid() == 0) {  // only root can hand a directory to another user
    ::chmod((temp.path() / "shared").c_str(), 0700);
    REQUIRE(::chown((temp.path() / "shared").c_str(), 65534, 65534) == 0);
    DiskCache foreign = DiskCache::open();
    CHECK_FALSE(foreign.enabled());
    CHECK_THAT(foreign.disabled_reason(), Catch::Contains("is owned by uid 65534"));
  }
}

TEST_CASE("reliability: METRALE_CACHE_DIR with odd characters round-trips entries", "[reliability][env]") {
  TempDir temp;
  const auto dir = temp.path() / kOddName;
  ScopedEnv env("METRALE_CACHE_DIR", dir.string());
  DiskCache cache = DiskCache::open();
  REQUIRE(cache.enabled());
  CHECK(cache.dir() == dir);
  const CacheSections sections{{"cubin", std::string("\x7f"
                                                     "ELF\x01\x02",
                                                     6)}};
  REQUIRE(cache.store(sample_key(), sections));
  CHECK(cache.load(sample_key()) == sections);
  REQUIRE(cache.list().size() == 1);
  CHECK(cache.verify().at(0).ok);
}

TEST_CASE("reliability: METRALE_TEMPLATE_DIR relative, missing, a file, or odd", "[reliability][env]") {
  TempDir temp;
  temp.write("tpl/mine.cuh", "template <int N> __global__ void mine(float* p) { p[0] = N; }\n");
  temp.write("tpl/notes.txt", "ignored: not a .cuh");
  temp.write(kOddName + "/odd.cuh", "// odd\n");
  ScopedCwd cwd(temp.path());
  SECTION("relative: resolved against the working directory") {
    ScopedEnv env("METRALE_TEMPLATE_DIR", "tpl");
    SourceSet sources;
    sources.add_embedded_templates();
    CHECK(sources.names() == std::vector<std::string>{"mine.cuh"});
  }
  SECTION("odd characters: an existing directory is read") {
    ScopedEnv env("METRALE_TEMPLATE_DIR", (temp.path() / kOddName).string());
    SourceSet sources;
    sources.add_embedded_templates();
    CHECK(sources.names() == std::vector<std::string>{"odd.cuh"});
  }
  SECTION("an empty directory (or one without a .cuh) is refused by name, not left without sources") {
    temp.write("empty/notes.txt", "no template here");
    ScopedEnv env("METRALE_TEMPLATE_DIR", (temp.path() / "empty").string());
    SourceSet sources;
    CHECK_THROWS_AS(sources.add_embedded_templates(), ConfigError);
    CHECK_THROWS_WITH(sources.add_embedded_templates(),
                      "METRALE_TEMPLATE_DIR='" + (temp.path() / "empty").string() +
                          "' holds no .cuh template (it replaces the embedded templates: put the templates there, "
                          "or unset it to use the embedded ones)");
  }
  for (const std::string& value : {std::string("no-such-dir"), (temp.path() / "tpl" / "mine.cuh").string(),
                                   (temp.path() / (kOddName + "-missing")).string()}) {
    INFO(value);
    ScopedEnv env("METRALE_TEMPLATE_DIR", value);
    SourceSet sources;
    CHECK_THROWS_AS(sources.add_embedded_templates(), ConfigError);
    CHECK_THROWS_WITH(sources.add_embedded_templates(),
                      Catch::Contains("METRALE_TEMPLATE_DIR='" + value + "' is not an existing directory"));
  }
}

TEST_CASE("reliability: METRALE_HARDWARE_DIR relative or odd loads, a missing odd one is quoted",
          "[reliability][env]") {
  TempDir temp;
  write_hardware_dir(temp, "hw");
  write_hardware_dir(temp, kOddName);
  ScopedCwd cwd(temp.path());
  {
    ScopedEnv env(kHardwareDirEnv, "hw");
    const auto targets = load_targets(metrale::ops::library_catalog());
    REQUIRE(targets.size() == 2);
    CHECK(find_target(targets, "hopper")->source == "hw/hopper/HARDWARE.toml");
  }
  {
    ScopedEnv env(kHardwareDirEnv, (temp.path() / kOddName).string());
    const auto targets = load_targets(metrale::ops::library_catalog());
    REQUIRE(targets.size() == 2);
    CHECK(find_target(targets, "generic")->source == (temp.path() / kOddName / "generic/HARDWARE.toml").string());
  }
  for (const std::string& value : {std::string("no-such-hw"), (temp.path() / (kOddName + "-missing")).string()}) {
    INFO(value);
    ScopedEnv env(kHardwareDirEnv, value);
    CHECK_THROWS_AS(load_targets(metrale::ops::library_catalog()), ConfigError);
    CHECK_THROWS_WITH(load_targets(metrale::ops::library_catalog()),
                      Catch::Contains("METRALE_HARDWARE_DIR=" + value + ": not an existing directory"));
  }
}
