// The disk cache under faults that need a separate process: a file-size limit (EFBIG instead
// of SIGXFSZ), a directory the process cannot write (a non-root child, since root ignores
// permission bits), and a writer killed at a fixed point of its write (its own write probe). Each runs in a forked
// child whose exit code is the number of the first check that failed (0 = all held).
#include <fmt/format.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <random>
#include <thread>

#include "ground/log.hpp"
#include "jit/cache_file_io.hpp"
#include "jit/disk_cache.hpp"
#include "support/cache_test_support.hpp"

using namespace metrale;
using cache_test::file_names;
using cache_test::RecordingSink;
using cache_test::run_in_child;
using cache_test::sample_key;
using cache_test::TempDir;

namespace {

constexpr const char* kWriteFailed = "disk cache write failed";
constexpr const char* kNotStored = "new ones will not be stored";

// Checks inside a child: returns `code` from the enclosing lambda when `condition` fails.
#define CHILD_CHECK(condition, code)                                         \
  do {                                                                       \
    if (!(condition)) {                                                      \
      std::fprintf(stderr, "child check %d failed: %s\n", code, #condition); \
      return code;                                                           \
    }                                                                        \
  } while (false)

}  // namespace

TEST_CASE("a file-size limit fails writes with EFBIG, one warning, no crash, no leftovers", "[cache]") {
  TempDir temp;
  const EntryKey small_key = sample_key("small");
  const int code = run_in_child([&] {
    auto sink = std::make_shared<RecordingSink>();
    logger().sinks().push_back(sink);
    logger().set_level(spdlog::level::debug);
    DiskCache cache = DiskCache::open_at(temp.path());
    CHILD_CHECK(cache.store(small_key, {{"cubin", "fits"}}), 1);
    const rlimit limit{4096, 4096};
    CHILD_CHECK(::setrlimit(RLIMIT_FSIZE, &limit) == 0, 2);
    const CacheSections big{{"cubin", std::string(100000, 'x')}};
    CHILD_CHECK(!cache.store(sample_key("big"), big), 3);
    CHILD_CHECK(!cache.store(sample_key("big2"), big), 4);
    CHILD_CHECK(!cache.writable(), 5);
    CHILD_CHECK(cache.stats().write_failures == 1, 6);
    CHILD_CHECK(cache.load(small_key).has_value(), 7);  // loads still work
    DiskCache second = DiskCache::open_at(temp.path());
    CHILD_CHECK(!second.store(sample_key("big3"), big), 8);
    // One warning per process: the second instance's failure is logged at debug only.
    CHILD_CHECK(sink->count(spdlog::level::warn, kWriteFailed) <= 1, 9);
    CHILD_CHECK(sink->count(spdlog::level::warn, kWriteFailed) + sink->count(spdlog::level::debug, kWriteFailed) == 2,
                10);
    for (const auto& record : sink->records) {
      if (record.text.find(kWriteFailed) != std::string::npos) {
        CHILD_CHECK(record.text.find("File too large") != std::string::npos, 11);
        CHILD_CHECK(record.text.find(temp.path().string()) != std::string::npos, 12);
      }
    }
    return 0;
  });
  CHECK(code == 0);
  CHECK(file_names(temp.path()) == std::vector<std::string>{small_key.file_name()});
}

TEST_CASE("a read-only cache directory serves loads and refuses writes gracefully", "[cache]") {
  // As root (CI) the directory goes to nobody and a child drops to nobody, since root ignores
  // permission bits; as anyone else the directory stays ours and the child keeps our uid.
  const bool root = ::geteuid() == 0;
  TempDir temp;
  ::chmod(temp.path().c_str(), 0711);  // let the unprivileged child reach the directory
  const auto dir = temp.path() / "cache";
  const EntryKey existing = sample_key("existing");
  {
    DiskCache cache = DiskCache::open_at(dir);
    REQUIRE(cache.store(existing, {{"cubin", "prebuilt"}}));
  }
  if (root) {
    REQUIRE(::chown(dir.c_str(), 65534, 65534) == 0);
    REQUIRE(::chown((dir / existing.file_name()).c_str(), 65534, 65534) == 0);
  }
  REQUIRE(::chmod(dir.c_str(), 0500) == 0);
  const int code = run_in_child([&] {
    CHILD_CHECK(!root || (::setgid(65534) == 0 && ::setuid(65534) == 0), 1);
    CHILD_CHECK(::access(dir.c_str(), W_OK) != 0, 9);  // the premise: this process cannot write there
    auto sink = std::make_shared<RecordingSink>();
    logger().sinks().push_back(sink);
    logger().set_level(spdlog::level::debug);
    DiskCache cache = DiskCache::open_at(dir);
    CHILD_CHECK(cache.enabled(), 2);
    CHILD_CHECK(cache.load(existing) == CacheSections({{"cubin", "prebuilt"}}), 3);
    // Known read-only at open: no write is even tried, and one warning says so.
    CHILD_CHECK(!cache.writable(), 4);
    CHILD_CHECK(!cache.store(sample_key("new"), {{"cubin", "x"}}), 5);
    CHILD_CHECK(cache.stats().write_failures == 0, 6);
    bool said_read_only = false;
    for (const auto& record : sink->records) {
      said_read_only = said_read_only || record.text.find(kNotStored) != std::string::npos;
    }
    CHILD_CHECK(said_read_only, 9);
    // Nested in a directory it cannot write: disabled with the reason, not a crash.
    DiskCache nested = DiskCache::open_at(dir / "sub");
    CHILD_CHECK(!nested.enabled(), 7);
    CHILD_CHECK(nested.disabled_reason().find("Permission denied") != std::string::npos, 8);
    return 0;
  });
  CHECK(code == 0);
  CHECK(file_names(dir) == std::vector<std::string>{existing.file_name()});
  ::chmod(dir.c_str(), 0700);  // lets TempDir remove it
}

TEST_CASE("a cache prepared by root is shared read-only with other users", "[cache]") {
  if (::geteuid() != 0) {
    WARN("needs root to prepare a root-owned cache and switch to another user; skipped");
    return;
  }
  TempDir temp;
  ::chmod(temp.path().c_str(), 0711);
  const auto dir = temp.path() / "shared";
  const EntryKey existing = sample_key("existing");
  std::mt19937_64 rng(13);
  const CacheSections sections{{"cubin", cache_test::random_bytes(rng, 512)}};
  {
    DiskCache cache = DiskCache::open_at(dir);
    REQUIRE(cache.store(existing, sections));
  }
  // What an image build does: root's cache, readable by all, writable by root only.
  REQUIRE(::chmod(dir.c_str(), 0755) == 0);
  REQUIRE(::chmod((dir / existing.file_name()).c_str(), 0644) == 0);
  const int code = run_in_child([&] {
    CHILD_CHECK(::setgid(65534) == 0 && ::setuid(65534) == 0, 1);
    auto sink = std::make_shared<RecordingSink>();
    logger().sinks().push_back(sink);
    logger().set_level(spdlog::level::debug);
    DiskCache cache = DiskCache::open_at(dir);
    CHILD_CHECK(cache.enabled(), 2);
    CHILD_CHECK(!cache.writable(), 3);
    CHILD_CHECK(cache.load(existing) == sections, 4);
    CHILD_CHECK(!cache.store(sample_key("new"), {{"cubin", "x"}}), 5);
    bool said_read_only = false;
    for (const auto& record : sink->records) {
      said_read_only = said_read_only || (record.text.find(kNotStored) != std::string::npos &&
                                          record.text.find("owned by uid 0") != std::string::npos);
    }
    CHILD_CHECK(said_read_only, 6);
    return 0;
  });
  CHECK(code == 0);
  // Another (non-root) owner is still refused, shared or not.
  REQUIRE(::chown(dir.c_str(), 65533, 65533) == 0);
  const int foreign = run_in_child([&] {
    CHILD_CHECK(::setgid(65534) == 0 && ::setuid(65534) == 0, 1);
    DiskCache cache = DiskCache::open_at(dir);
    CHILD_CHECK(!cache.enabled(), 2);
    CHILD_CHECK(cache.disabled_reason().find("owned by uid 65533") != std::string::npos, 3);
    return 0;
  });
  CHECK(foreign == 0);
  CHECK(file_names(dir) == std::vector<std::string>{existing.file_name()});
}

namespace {

// The stage the writer child kills itself at (set in the child before it writes).
CacheWriteStage kill_stage = CacheWriteStage::kHalfWritten;

void kill_at_stage(CacheWriteStage stage) {
  if (stage == kill_stage) {
    ::raise(SIGKILL);
  }
}

}  // namespace

TEST_CASE("a writer killed mid-write leaves no torn entry", "[cache]") {
  // The kill point is deterministic: the writer's own write probe raises SIGKILL halfway through
  // the temp file, or after it is complete and before the rename.
  const CacheWriteStage stage = GENERATE(CacheWriteStage::kHalfWritten, CacheWriteStage::kBeforeRename);
  INFO("killed at stage " << static_cast<int>(stage));
  TempDir temp;
  const EntryKey kept = sample_key("kept");
  const EntryKey killed = sample_key("killed");
  constexpr std::size_t kBytes = std::size_t{1} << 20;
  std::fflush(nullptr);
  const pid_t writer = ::fork();
  if (writer == 0) {
    DiskCache cache = DiskCache::open_at(temp.path());
    std::mt19937_64 rng(9);
    const bool stored = cache.store(kept, {{"cubin", cache_test::random_bytes(rng, kBytes)}});
    kill_stage = stage;
    set_cache_write_probe(&kill_at_stage);
    cache.store(killed, {{"cubin", cache_test::random_bytes(rng, kBytes)}});
    ::_exit(stored ? 0 : 1);  // reached only when the probe did not kill the writer
  }
  int status = 0;
  ::waitpid(writer, &status, 0);
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);

  DiskCache cache = DiskCache::open_at(temp.path());
  for (const auto& checked : cache.verify()) {
    INFO(checked.path << ": " << checked.problem);
    CHECK(checked.ok);
  }
  const auto loaded = cache.load(kept);
  REQUIRE(loaded.has_value());
  CHECK((*loaded)[0].second.size() == kBytes);
  CHECK_FALSE(cache.load(killed).has_value());
  CHECK(cache.stats().bad_entries == 0);
  CHECK(cache.list().size() == 1);  // the killed write left its temp file, never listed as an entry
  std::size_t temps = 0;
  for (const auto& name : file_names(temp.path())) {
    temps += is_cache_temp_name(name) ? 1 : 0;
  }
  CHECK(temps == 1);
}
