// cache_trust_test.cpp: the folders a cache lives in are judged as ssh's StrictModes judges
// ~/.ssh (jit/cache_trust.hpp), and every writer obeys: a cache root owned by another user, one
// group- or world-writable, one under a folder anyone may replace it in, or a relative one gets no
// disk entry, no verdict and no host-JIT object, anywhere; a sticky /tmp-like folder above is fine.
// The tests run as root in CI: "another user" is nobody (uid 65534), set by chown.
#include "jit/cache_trust.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "host/host_backend.hpp"
#include "jit/disk_cache.hpp"
#include "metrale/gpu/kernel_launch.hpp"
#include "ref/bf16.hpp"
#include "runtime/verdict_cache.hpp"
#include "support/isolated_runtime.hpp"
#include "support/temp_dir.hpp"

using namespace metrale;

namespace {

using Sources = std::map<std::string, std::string, std::less<>>;

// How a folder is made untrustworthy: its owner, its mode, or a folder above it.
enum class Spoil { kOtherOwner, kGroupWritable, kWorldWritable, kOpenParent };

// A fresh cache root under `base`, spoiled as asked. Returns the root.
std::filesystem::path spoiled_root(const std::filesystem::path& base, Spoil spoil) {
  std::filesystem::path root = base / "cache";
  if (spoil == Spoil::kOpenParent) {
    std::filesystem::create_directory(base / "open");
    REQUIRE(::chmod((base / "open").c_str(), 0777) == 0);  // no sticky bit: anyone may rename "cache"
    root = base / "open" / "cache";
  }
  std::filesystem::create_directory(root);
  REQUIRE(::chmod(root.c_str(), 0700) == 0);
  if (spoil == Spoil::kOtherOwner) {
    REQUIRE(::chown(root.c_str(), 65534, 65534) == 0);
  } else if (spoil == Spoil::kGroupWritable) {
    REQUIRE(::chmod(root.c_str(), 0770) == 0);
  } else if (spoil == Spoil::kWorldWritable) {
    REQUIRE(::chmod(root.c_str(), 0777) == 0);
  }
  return root;
}

std::size_t files_under(const std::filesystem::path& dir) {
  std::size_t count = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    count += entry.is_directory() ? 0 : 1;
    INFO("found " << entry.path().string());
    CHECK(entry.is_directory());
  }
  return count;
}

VerdictKey sample_key() { return {"host", "uuid-7", "none", "engine_mirror", "b64", "feedc0de"}; }

KernelVerdict sample_verdict() {
  KernelVerdict verdict;
  verdict.verdict = ops::CheckVerdict::kPassed;
  verdict.check = "bytes == reference (M=9)";
  verdict.worst = "all equal";
  verdict.ms = 0.75;
  verdict.cacheable = true;
  return verdict;
}

Sources engine_sources() {
  std::ifstream in(std::string(METRALE_SOURCE_DIR) + "/tests/data/engine/templates/engine_mirror.cuh");
  REQUIRE(in.good());
  std::ostringstream text;
  text << in.rdbuf();
  return Sources{{"engine_mirror.cuh", text.str()}};
}

// Compiles the engine's mirror kernel with the host JIT keeping objects under `host_dir` and runs
// it on random input against its reference (it must run, wherever its object went).
void jit_and_run(const std::filesystem::path& host_dir) {
  HostBackendOptions options;
  options.worker_threads = 2;
  options.jit_cache_dir = host_dir;
  options.jit_env = [](const char*) -> std::optional<std::string> { return std::nullopt; };
  HostBackend gpu(options);
  const Sources sources = engine_sources();
  const KernelHandle kernel = gpu.load(LoadRequest{"engine_mirror",
                                                   KernelParams{64, 0, 0},
                                                   "engine::mirror_scale<64>",
                                                   {},
                                                   {},
                                                   ImageKind::kCubin,
                                                   "engine_mirror.cuh",
                                                   &sources});
  constexpr std::uint32_t kBlock = 64;
  constexpr std::uint32_t kChunks = 3;
  const std::vector<float> x = ref::random_floats(kBlock * kChunks, 0x7a57, -3, 3);
  const DevicePtr in = test::upload(gpu, x);
  const DevicePtr out = test::upload(gpu, std::vector<float>(x.size(), std::numeric_limits<float>::quiet_NaN()));
  KernelLaunch(gpu, kernel)
      .grid({kChunks, 1, 1})
      .block({kBlock, 1, 1})
      .arg_ptr(in)
      .arg_ptr(out)
      .arg_f32(0.5F)
      .arg_i32(kChunks)
      .launch();
  std::vector<float> got(x.size());
  gpu.copy_to_host(got.data(), out, got.size() * sizeof(float));
  for (std::size_t chunk = 0; chunk < kChunks; ++chunk) {
    for (std::size_t i = 0; i < kBlock; ++i) {
      REQUIRE(got[chunk * kBlock + i] == x[chunk * kBlock + (kBlock - 1 - i)] * 0.5F);
    }
  }
}

}  // namespace

TEST_CASE("an untrusted cache folder gets no disk entry and no verdict and is refused with its path and rule",
          "[cache][trust]") {
  test::TempDir base;
  const auto [spoil, rule] = GENERATE(table<Spoil, std::string>({
      {Spoil::kOtherOwner, "is owned by uid 65534"},
      {Spoil::kGroupWritable, "has mode 0770, writable by group or others"},
      {Spoil::kWorldWritable, "has mode 0777, writable by group or others"},
      {Spoil::kOpenParent, "(a folder above the cache) has mode 0777"},
  }));
  const std::filesystem::path root = spoiled_root(base.path(), spoil);
  INFO(root.string() << ": " << rule);

  const TrustedFolder trusted = trusted_cache_folder(root, "verdicts");
  CHECK_FALSE(trusted.dir);
  CHECK_THAT(trusted.problem, Catch::Contains(rule));

  DiskCache disk = DiskCache::open_at(root);
  CHECK_FALSE(disk.enabled());
  CHECK_THAT(disk.disabled_reason(), Catch::Contains("refusing cache directory") && Catch::Contains(rule));

  const VerdictCache verdicts(root / "verdicts");
  verdicts.store(sample_key(), sample_verdict());
  CHECK_FALSE(verdicts.load(sample_key()));
  CHECK_FALSE(std::filesystem::exists(root / "verdicts"));
  CHECK(files_under(base.path()) == 0);
}

TEST_CASE("a relative cache folder gets no verdict and no folder in the working directory", "[cache][trust]") {
  const std::string relative = "metrale-relative-cache-" + std::to_string(::getpid());
  const TrustedFolder trusted = trusted_cache_folder(relative, "verdicts");
  CHECK_FALSE(trusted.dir);
  CHECK_THAT(trusted.problem, Catch::Contains("is not an absolute path"));
  const VerdictCache verdicts(std::filesystem::path(relative) / "verdicts");
  verdicts.store(sample_key(), sample_verdict());
  CHECK_FALSE(verdicts.load(sample_key()));
  CHECK_FALSE(DiskCache::open_at(relative).enabled());
  CHECK_FALSE(std::filesystem::exists(relative));
}

TEST_CASE("a trusted cache folder under a sticky world-writable folder keeps its verdicts", "[cache][trust]") {
  test::TempDir base;
  std::filesystem::create_directory(base.path() / "shared");
  REQUIRE(::chmod((base.path() / "shared").c_str(), 01777) == 0);  // as /tmp
  const std::filesystem::path root = base.path() / "shared" / "mine" / "cache";
  const TrustedFolder trusted = trusted_cache_folder(root, "verdicts");
  INFO(trusted.problem);
  REQUIRE(trusted.dir);
  struct stat info {};
  REQUIRE(::stat(root.c_str(), &info) == 0);
  CHECK((info.st_mode & 07777) == 0700);
  CHECK(DiskCache::open_at(root).enabled());
  const VerdictCache verdicts(root / "verdicts");
  verdicts.store(sample_key(), sample_verdict());
  const std::optional<KernelVerdict> back = verdicts.load(sample_key());
  REQUIRE(back);
  CHECK(back->cached);
  CHECK(back->check == "bytes == reference (M=9)");
  REQUIRE(::stat((root / "verdicts" / "key").c_str(), &info) == 0);
  CHECK((info.st_mode & 0777) == 0600);
}

TEST_CASE("the host JIT keeps no object in an untrusted or relative cache folder and still runs the kernel",
          "[cache][trust][host_jit]") {
  test::TempDir base;
  SECTION("world-writable") {
    const std::filesystem::path root = spoiled_root(base.path(), Spoil::kWorldWritable);
    jit_and_run(root / "host");
    CHECK_FALSE(std::filesystem::exists(root / "host"));
  }
  SECTION("owned by another user") {
    const std::filesystem::path root = spoiled_root(base.path(), Spoil::kOtherOwner);
    jit_and_run(root / "host");
    CHECK_FALSE(std::filesystem::exists(root / "host"));
  }
  SECTION("relative") {
    const std::filesystem::path relative = "metrale-relative-host-" + std::to_string(::getpid());
    jit_and_run(relative / "host");
    CHECK_FALSE(std::filesystem::exists(relative));
  }
  CHECK(files_under(base.path()) == 0);
}
