// What the host JIT reads back is checked before use (src/host/host_object_file.hpp): a cached
// object truncated, modified, of an older format or not a regular file is never loaded (it is
// removed and compiled again, the reason logged); `cache verify` names it and `cache clear`
// removes it; source names are names (the registered text is compiled, never a file of that
// name on disk); a full disk during a compile gives a reason with the path and the errno text.
#include <fmt/format.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>

#include "ground/log.hpp"
#include "host/host_jit.hpp"
#include "host/host_object_file.hpp"
#include "metrale/error.hpp"
#include "metrale/jit/source_set.hpp"
#include "support/cache_test_support.hpp"
#include "support/host_jit_support.hpp"
#include "support/temp_dir.hpp"

namespace {

using metrale::test::check_runs;
using metrale::test::engine_sources;
using metrale::test::jit_options;
using metrale::test::load_parent;
using metrale::test::Sources;

std::filesystem::path only_object(const std::filesystem::path& dir) {
  std::filesystem::path object;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".so") {
      REQUIRE(object.empty());
      object = entry.path();
    }
  }
  REQUIRE_FALSE(object.empty());
  return object;
}

std::string read_all(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_all(const std::filesystem::path& path, const std::string& bytes) {
  std::filesystem::remove(path);
  std::ofstream(path, std::ios::binary) << bytes;
  std::filesystem::permissions(path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
}

// Builds the mirror kernel once into `dir` (a first process would).
void build_once(const std::filesystem::path& dir) {
  metrale::HostBackend gpu(jit_options(dir));
  REQUIRE(load_parent(gpu, engine_sources()).present());
  REQUIRE(gpu.jit_stats().compiles == 1);
}

// A later backend on `dir`: the bad object is not loaded, a warning says why, and the kernel
// is compiled again and runs right.
void expect_rebuilt(const std::filesystem::path& dir, const std::string& reason, std::uint64_t seed) {
  auto sink = std::make_shared<metrale::cache_test::RecordingSink>();
  metrale::logger().sinks().push_back(sink);
  {
    metrale::HostBackend gpu(jit_options(dir));
    const metrale::KernelHandle kernel = load_parent(gpu, engine_sources());
    REQUIRE(kernel.present());
    CHECK(gpu.jit_stats().compiles == 1);
    CHECK(gpu.jit_stats().cache_hits == 0);
    check_runs(gpu, kernel, seed);
  }
  metrale::logger().sinks().pop_back();
  CHECK(sink->count(spdlog::level::warn, reason) == 1);
  CHECK(sink->count(spdlog::level::warn, "compiled again") == 1);
  // The rebuilt object is sound and loads from the cache.
  CHECK(metrale::host::verify_host_objects(dir).front().problem.empty());
  metrale::HostBackend again(jit_options(dir));
  REQUIRE(load_parent(again, engine_sources()).present());
  CHECK(again.jit_stats().cache_hits == 1);
}

}  // namespace

TEST_CASE("a truncated host-JIT object is never loaded but rebuilt with a logged reason", "[host][jit][readback]") {
  metrale::test::TempDir cache("metrale-readback-trunc");
  build_once(cache.path());
  const std::filesystem::path object = only_object(cache.path());
  const std::string bytes = read_all(object);
  std::mt19937_64 random(261);
  // Cut somewhere in the object's loaded part: mapping past the end is what gave SIGBUS.
  const std::size_t cut = std::uniform_int_distribution<std::size_t>(bytes.size() / 4, bytes.size() / 2)(random);
  write_all(object, bytes.substr(0, cut));
  const auto verdicts = metrale::host::verify_host_objects(cache.path());
  REQUIRE(verdicts.size() == 1);
  CHECK_THAT(verdicts[0].problem, Catch::Contains(object.string()) && Catch::Contains("trailer"));
  expect_rebuilt(cache.path(), "trailer", 31);
}

TEST_CASE("a modified host-JIT object fails its checksum and is rebuilt", "[host][jit][readback]") {
  metrale::test::TempDir cache("metrale-readback-mod");
  build_once(cache.path());
  const std::filesystem::path object = only_object(cache.path());
  std::string bytes = read_all(object);
  std::mt19937_64 random(262);
  const std::size_t at = std::uniform_int_distribution<std::size_t>(64, bytes.size() - 65)(random);
  bytes[at] = static_cast<char>(bytes[at] ^ 0x5a);
  write_all(object, bytes);
  CHECK_THAT(metrale::host::verify_host_objects(cache.path()).front().problem, Catch::Contains("checksum mismatch"));
  expect_rebuilt(cache.path(), "checksum mismatch", 32);
}

TEST_CASE("a host-JIT object of another key or with no trailer is rebuilt", "[host][jit][readback]") {
  metrale::test::TempDir cache("metrale-readback-key");
  build_once(cache.path());
  const std::filesystem::path object = only_object(cache.path());
  const std::string sealed = read_all(object);
  const std::string elf = sealed.substr(0, sealed.size() - metrale::host::kHostObjectTrailerBytes);
  // An object from before trailers (or one whose trailer was cut off).
  write_all(object, elf);
  expect_rebuilt(cache.path(), "no metrale trailer", 33);
  // A sound object sealed for another key, copied under this one's name.
  write_all(object, metrale::host::seal_host_object(elf, "00000000deadbeef"));
  CHECK_THAT(metrale::host::verify_host_objects(cache.path()).front().problem,
             Catch::Contains("built for key 00000000deadbeef"));
  expect_rebuilt(cache.path(), "built for key 00000000deadbeef", 34);
}

TEST_CASE("host-JIT objects that are not regular files are refused without blocking", "[host][jit][readback]") {
  metrale::test::TempDir cache("metrale-readback-types");
  build_once(cache.path());
  const std::filesystem::path object = only_object(cache.path());
  std::filesystem::remove(object);
  struct Case {
    const char* rule;
    std::function<void()> plant;
  };
  const std::vector<Case> cases{{"a FIFO", [&] { REQUIRE(::mkfifo(object.c_str(), 0600) == 0); }},
                                {"a symbolic link", [&] { std::filesystem::create_symlink("/dev/zero", object); }},
                                {"a directory", [&] { std::filesystem::create_directory(object); }},
                                {"past the limit", [&] {
                                   write_all(object, "x");
                                   std::filesystem::resize_file(object,
                                                                metrale::host::kHostObjectMaxBytes + 1);  // sparse
                                 }}};
  for (const Case& planted : cases) {
    INFO(planted.rule);
    planted.plant();
    const auto verdicts = metrale::host::verify_host_objects(cache.path());
    REQUIRE(verdicts.size() == 1);
    CHECK_THAT(verdicts[0].problem, Catch::Contains(object.string()) && Catch::Contains(planted.rule));
    {
      metrale::HostBackend gpu(jit_options(cache.path()));
      if (std::filesystem::is_directory(object) && !std::filesystem::is_symlink(object)) {
        // Nothing may be renamed over a folder: the kernel is refused with the path, not run.
        CHECK_THROWS_WITH(load_parent(gpu, engine_sources()),
                          Catch::Contains(object.string()) && Catch::Contains("Is a directory"));
      } else {
        const metrale::KernelHandle kernel = load_parent(gpu, engine_sources());
        REQUIRE(kernel.present());
        check_runs(gpu, kernel, 35);
      }
    }
    std::filesystem::remove_all(object);
  }
}

TEST_CASE("cache verify names bad host-JIT objects and cache clear removes them", "[host][jit][readback]") {
  metrale::test::TempDir cache("metrale-readback-clear");
  build_once(cache.path());
  const std::filesystem::path good = only_object(cache.path());
  const std::filesystem::path bad = cache.path() / "k.b64.host.0123456789abcdef.so";
  write_all(bad, read_all(good).substr(0, 1000));
  cache.write("notes.txt", "not an object");
  const auto verdicts = metrale::host::verify_host_objects(cache.path());
  REQUIRE(verdicts.size() == 2);
  CHECK(std::count_if(verdicts.begin(), verdicts.end(), [](const auto& v) { return v.problem.empty(); }) == 1);
  CHECK(metrale::host::clear_host_objects(cache.path()) == 2);
  CHECK(metrale::host::verify_host_objects(cache.path()).empty());
  CHECK(std::filesystem::exists(cache.path() / "notes.txt"));
}

TEST_CASE("source names are names and never paths", "[jit][readback]") {
  metrale::SourceSet set;
  for (const std::string name : {"x.cuh", "sub/x.cuh", "a..b.cuh", "..x/y.cuh", "ops/gemm/k.cuh"}) {
    INFO(name);
    CHECK(metrale::source_name_problem(name).empty());
    CHECK_NOTHROW(set.add_source(name, "// text"));
  }
  const std::vector<std::pair<std::string, std::string>> refused{{"/etc/passwd", "starts with '/'"},
                                                                 {"../x.cuh", "'..' part"},
                                                                 {"sub/../../x.cuh", "'..' part"},
                                                                 {"sub/..", "'..' part"},
                                                                 {std::string("x\0.cuh", 6), "byte 0x00"},
                                                                 {"x\n#include \"/etc/passwd", "byte 0x0a"},
                                                                 {"x\".cuh", "byte 0x22"},
                                                                 {"", "empty"}};
  for (const auto& [name, rule] : refused) {
    INFO(name);
    CHECK_THAT(metrale::source_name_problem(name), Catch::Contains(rule));
    CHECK_THROWS_AS(set.add_source(name, "// text"), metrale::ArgumentError);
  }
  CHECK_THROWS_WITH(set.add_source("/abs/k.cuh", ""),
                    Catch::Contains("/abs/k.cuh") && Catch::Contains("not an absolute path"));
}

TEST_CASE("the host JIT compiles the registered text and never a file of the source's name", "[host][jit][readback]") {
  metrale::test::TempDir cache("metrale-readback-names");
  Sources real = engine_sources();
  const std::string text = real.at("engine_mirror.cuh");
  // A decoy on disk with the same kernel scaled twice: compiling it would give wrong numbers.
  std::string decoy = text;
  const std::string product = "s * tile[BLOCK - 1 - t]";
  REQUIRE(decoy.find(product) != std::string::npos);
  decoy.replace(decoy.find(product), product.size(), "2.0f * s * tile[BLOCK - 1 - t]");
  cache.write("decoy/engine_mirror.cuh", decoy);
  metrale::HostBackend gpu(jit_options(cache.path() / "objects"));
  // A name in a subfolder is the registered text (it used to reach no file at all).
  const Sources nested{{"engine/engine_mirror.cuh", text}};
  const metrale::KernelHandle kernel = load_parent(gpu, nested, "engine/engine_mirror.cuh");
  REQUIRE(kernel.present());
  check_runs(gpu, kernel, 36);
  // An absolute name, or one climbing out with "..", is refused, never read from disk.
  const std::string absolute = (cache.path() / "decoy/engine_mirror.cuh").string();
  for (const std::string& name : {absolute, std::string("../decoy/engine_mirror.cuh")}) {
    INFO(name);
    const Sources escaping{{name, text}};
    CHECK_THROWS_WITH(load_parent(gpu, escaping, name),
                      Catch::Contains(name) && Catch::Contains("a source name is a name"));
  }
}

TEST_CASE("a host compile past a file-size limit names the path and the errno", "[host][jit][readback]") {
  metrale::test::TempDir cache("metrale-readback-full");
  const Sources sources = engine_sources();
  // limit: below the source's size (the library's own write fails), then past the sources but
  // below the preprocessed unit (the compiler's write fails). Each in a child: the limit is the
  // process's (and its compiler's).
  for (const rlim_t limit : {rlim_t{512}, rlim_t{8192}}) {
    INFO(limit);
    int pipe_ends[2];
    REQUIRE(::pipe(pipe_ends) == 0);
    const int code = metrale::cache_test::run_in_child([&] {
      ::close(pipe_ends[0]);
      ::signal(SIGXFSZ, SIG_IGN);
      const rlimit fsize{limit, limit};
      if (::setrlimit(RLIMIT_FSIZE, &fsize) != 0) {
        return 2;
      }
      metrale::host::HostJit jit(cache.path() / fmt::format("at{}", limit), jit_options(cache.path()).jit_env);
      const metrale::host::HostJitResult result = jit.build(metrale::host::HostJitRequest{
          "engine_mirror", metrale::KernelParams{64, 0, 0}, "engine::mirror_scale<64>", "engine_mirror.cuh", &sources});
      const std::string& reason = result.reason;
      if (::write(pipe_ends[1], reason.data(), reason.size()) != static_cast<ssize_t>(reason.size())) {
        return 3;
      }
      return result.kernel ? 4 : 0;
    });
    ::close(pipe_ends[1]);
    std::string reason;
    char buffer[4096];
    for (ssize_t got; (got = ::read(pipe_ends[0], buffer, sizeof buffer)) > 0;) {
      reason.append(buffer, static_cast<std::size_t>(got));
    }
    ::close(pipe_ends[0]);
    CHECK(code == 0);
    CHECK_THAT(reason, Catch::Contains((cache.path() / fmt::format("at{}", limit)).string()));
    if (limit < sources.at("engine_mirror.cuh").size()) {
      CHECK_THAT(reason, Catch::Contains("cannot write") && Catch::Contains("File too large"));
    } else {
      // The compiler's own words (GCC names the file it could not write, its errno text is its
      // own); they used to be lost with its log, written to a file on the same full disk.
      CHECK_THAT(reason, Catch::Contains("unit.ii") && Catch::Contains("error"));
    }
  }
}
