// DiskCache on a real directory: round trips, hits across instances, corrupted and foreign
// entries, refused directories, list/verify/clear, and threads sharing one cache.
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <random>
#include <thread>

#include "jit/disk_cache.hpp"
#include "metrale/error.hpp"
#include "support/cache_test_support.hpp"

using namespace metrale;
using cache_test::file_names;
using cache_test::read_all;
using cache_test::sample_key;
using cache_test::sample_sections;
using cache_test::TempDir;
using cache_test::write_all;

namespace {

// Stores one entry, lets `damage` change the file, and checks the next load misses, counts a
// bad entry and removes the file, and that a rebuilt entry then hits again.
void check_damage_detected(const std::function<void(std::filesystem::path)>& damage) {
  TempDir temp;
  std::mt19937_64 rng(42);
  DiskCache cache = DiskCache::open_at(temp.path());
  const EntryKey key = sample_key();
  const CacheSections sections = sample_sections(rng);
  REQUIRE(cache.store(key, sections));
  const auto path = temp.path() / key.file_name();
  damage(path);
  CHECK_FALSE(cache.load(key).has_value());
  CHECK(cache.stats().bad_entries == 1);
  CHECK_FALSE(std::filesystem::exists(path));
  REQUIRE(cache.store(key, sections));
  CHECK(cache.load(key) == sections);
}

}  // namespace

TEST_CASE("disk cache stores and loads sections, a second instance hits", "[cache]") {
  TempDir temp;
  std::mt19937_64 rng(1);
  const auto dir = temp.path() / "nested" / "cache";
  DiskCache cache = DiskCache::open_at(dir);
  REQUIRE(cache.enabled());
  CHECK((std::filesystem::status(dir).permissions() & std::filesystem::perms::all) ==
        std::filesystem::perms::owner_all);
  const EntryKey key = sample_key();
  const CacheSections sections = sample_sections(rng);
  CHECK_FALSE(cache.load(key).has_value());
  REQUIRE(cache.store(key, sections));
  CHECK(cache.load(key) == sections);
  CHECK(file_names(dir) == std::vector<std::string>{key.file_name()});
  CHECK(((std::filesystem::status(dir / key.file_name()).permissions() & std::filesystem::perms::all) ==
         (std::filesystem::perms::owner_read | std::filesystem::perms::owner_write)));

  DiskCache second = DiskCache::open_at(dir);
  CHECK(second.load(key) == sections);
  CHECK_FALSE(second.load(sample_key("other_kernel")).has_value());
  const CacheStats stats = cache.stats();
  CHECK(stats.hits == 1);
  CHECK(stats.misses == 1);
  CHECK(stats.writes == 1);
  CHECK(second.stats().hits == 1);
  CHECK(second.stats().misses == 1);
  CHECK_THROWS_AS(cache.store(key, {{"cubin", "a"}, {"cubin", "b"}}), ArgumentError);
}

TEST_CASE("truncated, bit-flipped and wrong-magic entries are removed and rebuilt", "[cache]") {
  SECTION("truncated") {
    check_damage_detected([](const std::filesystem::path& path) { std::filesystem::resize_file(path, 100); });
  }
  SECTION("empty") {
    check_damage_detected([](const std::filesystem::path& path) { std::filesystem::resize_file(path, 0); });
  }
  for (double where : {0.0, 0.01, 0.3, 0.5, 0.9, 0.999}) {
    SECTION("bit flipped at " + std::to_string(where)) {
      check_damage_detected([where](const std::filesystem::path& path) {
        std::string bytes = read_all(path);
        const auto offset = static_cast<std::size_t>(where * static_cast<double>(bytes.size()));
        bytes[offset] = static_cast<char>(bytes[offset] ^ 0x10);
        write_all(path, bytes);
      });
    }
  }
  SECTION("wrong magic") {
    check_damage_detected([](const std::filesystem::path& path) {
      std::string bytes = read_all(path);
      bytes.replace(0, 4,
                    "\x7f"
                    "ELF");
      write_all(path, bytes);
    });
  }
}

TEST_CASE("an entry for another arch or NVRTC under the requested name is a miss", "[cache]") {
  for (const EntryKey& stored : {sample_key("k", "sm_100", "13-0"), sample_key("k", "sm_90", "12-8")}) {
    TempDir temp;
    DiskCache cache = DiskCache::open_at(temp.path());
    const EntryKey requested = sample_key("k", "sm_90", "13-0");
    // Forge a collision: a valid entry for `stored` placed under the requested key's file name.
    REQUIRE(cache.store(stored, {{"cubin", "foreign"}}));
    std::filesystem::rename(temp.path() / stored.file_name(), temp.path() / requested.file_name());
    auto problems = cache.verify();
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].problem.starts_with("name mismatch"));
    CHECK_FALSE(cache.load(requested).has_value());
    CHECK(cache.stats().bad_entries == 1);
    CHECK(file_names(temp.path()).empty());
  }
}

TEST_CASE("a cache path that is a file, or lies under one, disables the cache", "[cache]") {
  TempDir temp;
  write_all(temp.path() / "file", "not a directory");
  for (const auto& path : {temp.path() / "file", temp.path() / "file" / "cache"}) {
    DiskCache cache = DiskCache::open_at(path);
    CHECK_FALSE(cache.enabled());
    INFO(cache.disabled_reason());
    CHECK(cache.disabled_reason().find(path.string()) != std::string::npos);
    CHECK(cache.disabled_reason().find("Not a directory") != std::string::npos);
    CHECK_FALSE(cache.load(sample_key()).has_value());
    CHECK_FALSE(cache.store(sample_key(), {{"cubin", "x"}}));
    CHECK(cache.list().empty());
  }
  CHECK(read_all(temp.path() / "file") == "not a directory");
  CHECK_FALSE(DiskCache::open_at("relative/dir").enabled());
}

TEST_CASE("a directory writable by others or owned by another user is refused", "[cache]") {
  TempDir temp;
  const auto shared = temp.path() / "shared";
  std::filesystem::create_directory(shared);
  ::chmod(shared.c_str(), 0777);
  DiskCache open_to_all = DiskCache::open_at(shared);
  CHECK_FALSE(open_to_all.enabled());
  CHECK(open_to_all.disabled_reason().find("mode 0777") != std::string::npos);

  const auto foreign = temp.path() / "foreign";
  std::filesystem::create_directory(foreign);
  ::chmod(foreign.c_str(), 0700);
  const bool changed_owner = ::chown(foreign.c_str(), 65534, 65534) == 0;
  REQUIRE((changed_owner || ::geteuid() != 0));
  if (::geteuid() == 0) {
    DiskCache refused = DiskCache::open_at(foreign);
    CHECK_FALSE(refused.enabled());
    CHECK(refused.disabled_reason().find("owned by uid 65534") != std::string::npos);
  }
}

TEST_CASE("entries owned by another user, writable by others, or symlinks are skipped", "[cache]") {
  TempDir temp;
  DiskCache cache = DiskCache::open_at(temp.path());
  const EntryKey key = sample_key();
  const auto path = temp.path() / key.file_name();
  REQUIRE(cache.store(key, {{"cubin", "planted?"}}));

  ::chmod(path.c_str(), 0666);
  CHECK_FALSE(cache.load(key).has_value());
  CHECK(std::filesystem::exists(path));  // skipped, not trusted enough to even delete
  ::chmod(path.c_str(), 0600);
  CHECK(cache.load(key).has_value());

  if (::geteuid() == 0) {
    REQUIRE(::chown(path.c_str(), 65534, 65534) == 0);
    CHECK_FALSE(cache.load(key).has_value());
    auto checked = cache.verify();
    REQUIRE(checked.size() == 1);
    CHECK(checked[0].problem.find("owned by uid 65534") != std::string::npos);
    // A rebuild replaces the foreign file with our own.
    REQUIRE(cache.store(key, {{"cubin", "ours"}}));
    CHECK(cache.load(key) == CacheSections{{"cubin", "ours"}});
  }

  std::filesystem::rename(path, temp.path() / "real");
  std::filesystem::create_symlink(temp.path() / "real", path);
  CHECK_FALSE(cache.load(key).has_value());
  CHECK(std::filesystem::is_symlink(path));

  // A FIFO planted under an entry's name must not block the reader.
  std::filesystem::remove(path);
  REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
  CHECK_FALSE(cache.load(key).has_value());
  CHECK(cache.stats().bad_entries >= 3);
}

TEST_CASE("list, verify and clear see entries only", "[cache]") {
  TempDir temp;
  std::mt19937_64 rng(5);
  DiskCache cache = DiskCache::open_at(temp.path());
  const EntryKey a = sample_key("alpha", "sm_90");
  const EntryKey b = sample_key("beta", "sm_121");
  REQUIRE(cache.store(a, sample_sections(rng)));
  REQUIRE(cache.store(b, {{"cubin", "tiny"}}));
  write_all(temp.path() / "notes.txt", "user file");
  write_all(temp.path() / ".alpha.cubin.tmp.1.2.3", "a writer in flight");
  write_all(temp.path() / ".beta.cubin.tmp.4.5.6", "left by a writer that died long ago");
  const auto two_hours_ago = std::filesystem::file_time_type::clock::now() - std::chrono::hours(2);
  std::filesystem::last_write_time(temp.path() / ".beta.cubin.tmp.4.5.6", two_hours_ago);

  auto listed = cache.list();
  REQUIRE(listed.size() == 2);
  CHECK(listed[0].kernel == "alpha");
  CHECK(listed[0].arch == "sm_90");
  CHECK(listed[0].params_tag == "b256l64g8");
  CHECK(listed[0].bytes == std::filesystem::file_size(temp.path() / a.file_name()));
  CHECK(listed[0].bytes > 4096);
  CHECK(listed[1].kernel == "beta");
  CHECK(listed[1].arch == "sm_121");
  CHECK(listed[1].age.count() <= 5);

  std::string bytes = read_all(temp.path() / b.file_name());
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 1);
  write_all(temp.path() / b.file_name(), bytes);
  auto verified = cache.verify();
  REQUIRE(verified.size() == 2);
  CHECK(verified[0].ok);
  CHECK_FALSE(verified[1].ok);
  CHECK(verified[1].path == temp.path() / b.file_name());
  CHECK(verified[1].problem.starts_with("checksum mismatch"));

  CHECK(cache.clear() == 2);
  auto left = file_names(temp.path());
  std::sort(left.begin(), left.end());
  CHECK(left == std::vector<std::string>{".alpha.cubin.tmp.1.2.3", "notes.txt"});
  CHECK(std::filesystem::is_directory(temp.path()));
}

TEST_CASE("open() follows METRALE_CACHE_DIR and restores it", "[cache]") {
  TempDir temp;
  const char* previous = std::getenv("METRALE_CACHE_DIR");
  const std::optional<std::string> saved = previous ? std::optional<std::string>(previous) : std::nullopt;
  ::setenv("METRALE_CACHE_DIR", (temp.path() / "env").c_str(), 1);
  DiskCache from_env = DiskCache::open();
  ::setenv("METRALE_CACHE_DIR", "not/absolute", 1);
  DiskCache relative = DiskCache::open();
  if (saved) {
    ::setenv("METRALE_CACHE_DIR", saved->c_str(), 1);
  } else {
    ::unsetenv("METRALE_CACHE_DIR");
  }
  CHECK(from_env.enabled());
  CHECK(from_env.dir() == temp.path() / "env");
  CHECK_FALSE(relative.enabled());
  CHECK(relative.disabled_reason().find("not an absolute path") != std::string::npos);
}

TEST_CASE("threads sharing one cache never see a torn entry", "[cache][concurrency]") {
  TempDir temp;
  DiskCache cache = DiskCache::open_at(temp.path());
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = t; i < t + 40; ++i) {
        const EntryKey key = sample_key(fmt::format("k{}", i % 3));
        const CacheSections sections{{"cubin", std::string(1000 + i % 3, static_cast<char>('a' + i % 3))}};
        if (!cache.store(key, sections)) {
          ++wrong;
        }
        auto loaded = cache.load(key);
        if (loaded && *loaded != sections) {
          ++wrong;
        }
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  CHECK(wrong == 0);
  CHECK(cache.stats().bad_entries == 0);
  CHECK(cache.stats().writes == 160);
  CHECK(file_names(temp.path()).size() == 3);
}
