// remote_cache_test.cpp: the Redis remote tier against a real redis-server of the test's own
// (tests/support/redis_server.hpp): a second registry with an empty disk compiles nothing; a
// planted bad entry is refused, dropped and republished; a server killed mid-build, an
// unreachable, a silent and a full one lose no kernel and cost one warning and at most one time
// limit; a malformed URL is a ConfigError. The kernels are the small JIT test templates, compiled
// to CUBIN by NVRTC with no device.
#include <catch2/catch.hpp>
#include <chrono>
#include <random>

#include "ground/log.hpp"
#include "jit/compiled_entry.hpp"
#include "jit/compiled_memory_cache.hpp"
#include "jit/disk_entry_store.hpp"
#include "jit/remote_entry_store.hpp"
#include "jit/variant_builder.hpp"
#include "metrale/error.hpp"
#include "metrale/jit/kernel_registry.hpp"
#include "support/cache_test_support.hpp"
#include "support/jit_test_support.hpp"
#include "support/redis_server.hpp"

using namespace metrale;
using cache_test::TempDir;
using test::RedisServer;

namespace {

using Clock = std::chrono::steady_clock;

const std::vector<KernelVariant>& test_variants() {
  static const std::vector<KernelVariant> variants{
      {"scale", "jit_test_kernels.cuh", "jit_test::scale<64>", KernelParams{64, 0, 0}, false},
      {"to_bf16", "jit_test_kernels.cuh", "jit_test::to_bf16<32>", KernelParams{0, 32, 0}, false},
      {"scale", "jit_test_kernels.cuh", "jit_test::scale<128>", KernelParams{128, 0, 0}, false},
      {"to_bf16", "jit_test_kernels.cuh", "jit_test::to_bf16<64>", KernelParams{0, 64, 0}, false},
  };
  return variants;
}

std::shared_ptr<RemoteEntryStore> tier_at(const RedisEndpoint& endpoint, RedisTimeouts timeouts = RedisTimeouts{}) {
  RemoteTierOptions options;
  options.endpoint = endpoint;
  options.timeouts = timeouts;
  return std::make_shared<RemoteEntryStore>(std::move(options));
}

// A registry over its own disk folder (empty when new), a private memory cache and `remote`.
struct Built {
  std::vector<BuildRecord> records;
  RegistryStats stats;
};
Built build(const std::filesystem::path& disk, std::shared_ptr<const EntryStore> remote, std::size_t count) {
  KernelRegistry::Options options;
  options.store = std::make_shared<EntryStore>(disk_entry_store(std::make_shared<DiskCache>(DiskCache::open_at(disk))));
  options.memory = std::make_shared<CompiledMemoryCache>();
  options.parallelism = 2;
  options.remote = std::move(remote);
  options.bundles = nullptr;
  KernelRegistry registry(jit_test_support::test_sources(), std::move(options));
  for (std::size_t i = 0; i < count; ++i) {
    registry.declare(test_variants()[i]);
  }
  Built out{registry.build("sm_90"), {}};
  out.stats = registry.stats();
  return out;
}

std::shared_ptr<const EntryStore> seam(const std::shared_ptr<RemoteEntryStore>& tier) {
  return std::make_shared<const EntryStore>(remote_entry_store(tier));
}

// The complete key (as the registry makes it) of test variant `i`.
EntryKey cache_key_of(std::size_t i) {
  const SourceSet sources = jit_test_support::test_sources();
  return detail::with_compiler(detail::make_entry_key(test_variants()[i], "sm_90", sources, {}));
}

std::size_t disk_entries(const std::filesystem::path& dir) {
  std::size_t n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    n += entry.path().extension() == ".cubin" ? 1 : 0;
  }
  return n;
}

// Attaches a recording sink to the library's logger for a scope.
struct LogCapture {
  std::shared_ptr<cache_test::RecordingSink> sink = std::make_shared<cache_test::RecordingSink>();
  spdlog::level::level_enum level = logger().level();
  LogCapture() {
    logger().sinks().push_back(sink);
    logger().set_level(spdlog::level::debug);
  }
  ~LogCapture() {
    logger().sinks().pop_back();
    logger().set_level(level);
  }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;
  std::size_t warnings(const std::string& containing) const { return sink->count(spdlog::level::warn, containing); }
};

void require_all_ok(const Built& built, std::size_t count) {
  REQUIRE(built.records.size() == count);
  for (const BuildRecord& record : built.records) {
    INFO(record.kernel << " " << record.params.tag() << ": " << (record.entry ? record.entry->log : ""));
    REQUIRE(record.ok());
    REQUIRE(record.entry->cubin != nullptr);
    REQUIRE_FALSE(record.entry->cubin->empty());
  }
}

}  // namespace

TEST_CASE("a second registry with an empty disk cache fetches every entry from Redis and compiles nothing",
          "[remote]") {
  RedisServer server;
  TempDir first_disk;
  TempDir second_disk;
  const auto tier = tier_at(server.endpoint());
  const Built first = build(first_disk.path(), seam(tier), 2);
  require_all_ok(first, 2);
  CHECK(first.records[0].origin == BuildOrigin::kNvrtc);
  CHECK(tier->stats().publishes == 2);
  CHECK(tier->probe().keys == 2);

  const auto other = tier_at(server.endpoint());  // another process's tier: no state shared
  const Built second = build(second_disk.path(), seam(other), 2);
  require_all_ok(second, 2);
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(second.records[i].origin == BuildOrigin::kRemote);
    CHECK(to_string(second.records[i].origin) == "remote");
    CHECK(second.records[i].entry->lowered_name == first.records[i].entry->lowered_name);
    CHECK(*second.records[i].entry->cubin == *first.records[i].entry->cubin);
  }
  CHECK(second.stats.nvrtc_programs == 0);
  CHECK(second.stats.nvrtc_compiles == 0);
  CHECK(second.stats.remote_hits == 2);
  CHECK(other->stats().hits == 2);
  CHECK(disk_entries(second_disk.path()) == 2);  // a fetched entry is kept on the local disk too

  const Built third = build(second_disk.path(), nullptr, 2);
  CHECK(third.records[0].origin == BuildOrigin::kDisk);
  CHECK(third.stats.disk_hits == 2);
}

TEST_CASE("a planted bad entry in Redis is refused, dropped, recompiled and republished", "[remote]") {
  RedisServer server;
  TempDir reference_disk;
  const Built reference = build(reference_disk.path(), nullptr, 2);  // no Redis: what NVRTC makes
  require_all_ok(reference, 2);

  const auto tier = tier_at(server.endpoint());
  RedisClient planter(server.endpoint(), RedisTimeouts{});
  std::mt19937_64 rng(35);
  const EntryKey scale_key = cache_key_of(0);
  const EntryKey bf16_key = cache_key_of(1);
  // Random bytes under the first key; under the second, a valid entry of the first (wrong key).
  REQUIRE(planter.set(tier->redis_key(scale_key), cache_test::random_bytes(rng, 3000), std::chrono::seconds(60)).ok());
  const EntrySections scale_sections = entry_to_sections(*reference.records[0].entry);
  REQUIRE(
      planter.set(tier->redis_key(bf16_key), encode_cache_entry(scale_key, scale_sections), std::chrono::seconds(60))
          .ok());

  LogCapture log;
  TempDir disk;
  const Built built = build(disk.path(), seam(tier), 2);
  require_all_ok(built, 2);
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(built.records[i].origin == BuildOrigin::kNvrtc);
    CHECK(built.records[i].entry->lowered_name == reference.records[i].entry->lowered_name);
    CHECK(*built.records[i].entry->cubin == *reference.records[i].entry->cubin);  // the right kernel each
  }
  CHECK(tier->stats().bad_entries == 2);
  CHECK(log.warnings("checksum mismatch") + log.warnings("bad magic") + log.warnings("truncated") == 1);
  CHECK(log.warnings("key mismatch") == 1);

  // The good ones were republished over them: their keys now hold valid entries of their own.
  for (const EntryKey& key : {scale_key, bf16_key}) {
    const RedisResult got = planter.get(tier->redis_key(key), kCacheMaxEntryBytes);
    REQUIRE(got.ok());
    CHECK(remote_entry_problem(got.value, key, nullptr).empty());
  }
  TempDir fresh;
  const Built again = build(fresh.path(), seam(tier_at(server.endpoint())), 2);
  CHECK(again.records[0].origin == BuildOrigin::kRemote);
  CHECK(again.records[1].origin == BuildOrigin::kRemote);
}

TEST_CASE("killing the Redis server mid-build loses no call: the rest compile locally, one warning", "[remote]") {
  RedisServer server;
  TempDir seed_disk;
  require_all_ok(build(seed_disk.path(), seam(tier_at(server.endpoint())), 2), 2);  // two of four in Redis

  // The server dies right after the build's first fetch.
  const auto tier = tier_at(server.endpoint());
  const EntryStore inner = remote_entry_store(tier);
  int loads = 0;
  auto killing = std::make_shared<EntryStore>(EntryStore{[&](const EntryKey& key) {
                                                           auto got = inner.load(key);
                                                           if (++loads == 1) {
                                                             server.kill();
                                                           }
                                                           return got;
                                                         },
                                                         inner.store});
  LogCapture log;
  TempDir disk;
  const auto started = Clock::now();
  const Built built = build(disk.path(), killing, 4);
  const auto took = Clock::now() - started;
  require_all_ok(built, 4);
  CHECK(built.records[0].origin == BuildOrigin::kRemote);
  for (std::size_t i = 1; i < 4; ++i) {
    CHECK(built.records[i].origin == BuildOrigin::kNvrtc);
  }
  CHECK(built.stats.nvrtc_compiles == 3);
  CHECK(tier->stats().connection_failures == 1);  // then backing off: nothing more asked
  CHECK(tier->stats().skipped >= 2);
  CHECK(log.warnings("remote cache") == 1);
  CHECK(disk_entries(disk.path()) == 4);
  INFO("build took " << std::chrono::duration<double>(took).count() << " s");
}

TEST_CASE("an unreachable or silent Redis costs at most one time limit, once, and every kernel builds", "[remote]") {
  SECTION("a closed loopback port: one connect attempt") {
    const std::uint16_t closed = test::free_loopback_port();
    const auto tier = tier_at(RedisEndpoint{"127.0.0.1", closed, 0});
    const EntryStore inner = remote_entry_store(tier);
    Clock::duration in_remote{};
    auto timed = std::make_shared<EntryStore>(EntryStore{[&](const EntryKey& key) {
                                                           const auto start = Clock::now();
                                                           auto got = inner.load(key);
                                                           in_remote += Clock::now() - start;
                                                           return got;
                                                         },
                                                         inner.store});
    LogCapture log;
    TempDir disk;
    const Built built = build(disk.path(), timed, 2);
    require_all_ok(built, 2);
    CHECK(built.records[0].origin == BuildOrigin::kNvrtc);
    CHECK(tier->stats().connection_failures == 1);
    CHECK(tier->stats().skipped == 3);  // the second load and both publishes
    CHECK(in_remote < tier->options().timeouts.connect + std::chrono::milliseconds(100));
    CHECK(log.warnings("remote cache redis://127.0.0.1:" + std::to_string(closed)) == 1);
    CHECK_FALSE(tier->probe().reachable);
  }
  SECTION("a server that accepts and never answers: one read time limit") {
    test::SilentListener silent;
    const RedisTimeouts quick{std::chrono::milliseconds(100), std::chrono::milliseconds(150)};
    const auto tier = tier_at(RedisEndpoint{"127.0.0.1", silent.port(), 0}, quick);
    const auto start = Clock::now();
    CHECK_FALSE(tier->load(cache_key_of(0)).has_value());
    CHECK_FALSE(tier->load(cache_key_of(1)).has_value());
    CHECK_FALSE(tier->store(cache_key_of(0), {{"cubin", "x"}}));
    const auto took = Clock::now() - start;
    CHECK(took >= quick.io);
    CHECK(took < quick.io + std::chrono::milliseconds(250));
    CHECK(tier->stats().connection_failures == 1);
    CHECK(tier->stats().skipped == 2);
  }
}

TEST_CASE("a full Redis refuses publishes: every kernel builds, one warning, reads go on", "[remote]") {
  RedisServer server({"--maxmemory", "1", "--maxmemory-policy", "noeviction"});
  const auto tier = tier_at(server.endpoint());
  LogCapture log;
  TempDir disk;
  const Built built = build(disk.path(), seam(tier), 2);
  require_all_ok(built, 2);
  CHECK(tier->stats().publish_failures == 1);  // then publishing waits; the second is skipped
  CHECK(tier->stats().skipped == 1);
  CHECK(tier->stats().connection_failures == 0);
  CHECK(log.warnings("OOM") == 1);
  CHECK_FALSE(tier->load(cache_key_of(0)).has_value());  // still asked (a miss), not backing off
  CHECK(tier->stats().misses == 3);
  CHECK(tier->probe().reachable);
}

TEST_CASE("a malformed METRALE_REMOTE_CACHE is a ConfigError naming the variable, the value and the rule", "[remote]") {
  auto env_with = [](std::optional<std::string> value) {
    return [value](const char* name) -> std::optional<std::string> {
      return std::string(name) == kRemoteCacheVariable ? value : std::nullopt;
    };
  };
  for (const char* bad :
       {"redis//host:1", "http://host:6379", "redis://host", "redis://:6379", "redis://host:0", "redis://host:65536",
        "redis://host:6379/x", "redis://user:pw@host:6379", "redis://ho st:6379", "redis://[::1:6379"}) {
    INFO(bad);
    try {
      remote_tier_from(std::nullopt, env_with(bad));
      FAIL("no ConfigError");
    } catch (const ConfigError& error) {
      const std::string message = error.what();
      CHECK(message.find("METRALE_REMOTE_CACHE") != std::string::npos);
      CHECK(message.find(bad) != std::string::npos);
      CHECK(message.find(kRedisUrlRule) != std::string::npos);
    }
  }
  CHECK_THROWS_WITH(remote_tier_from(std::string("redis:/x"), env_with("redis://h:1")),
                    Catch::Contains("RuntimeOptions::remote_cache='redis:/x'"));
  CHECK(remote_tier_from(std::nullopt, env_with(std::nullopt)) == nullptr);
  CHECK(remote_tier_from(std::nullopt, env_with("")) == nullptr);
  CHECK(remote_tier_from(std::string(""), env_with("redis://h:1")) == nullptr);  // the option turns it off
  const auto tier = remote_tier_from(std::nullopt, env_with("redis://cache.example:6380/3"));
  REQUIRE(tier != nullptr);
  CHECK(tier->options().endpoint == RedisEndpoint{"cache.example", 6380, 3});
  CHECK(parse_redis_url("redis://[::1]:7000").endpoint == RedisEndpoint{"::1", 7000, 0});
  CHECK(parse_redis_url("redis://[::1]:7000").endpoint->url() == "redis://[::1]:7000/0");
  CHECK(parse_redis_url("redis://10.0.0.2:6379/0").endpoint == RedisEndpoint{"10.0.0.2", 6379, 0});
}
