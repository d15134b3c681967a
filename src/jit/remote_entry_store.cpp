// remote_entry_store.cpp: the Redis tier: GET/SET/DEL of disk-format entries under the key's
// digest, the integrity check before use, the back-off and the one warning.
#include "jit/remote_entry_store.hpp"

#include <fmt/format.h>

#include <span>

#include "ground/log.hpp"
#include "jit/compiled_entry.hpp"
#include "jit/disk_entry_store.hpp"
#include "jit/nvrtc_compiler.hpp"
#include "metrale/error.hpp"

namespace metrale {

namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

bool remote_may_ask(Clock::time_point now, std::optional<Clock::time_point> down_until) {
  return !down_until || now >= *down_until;
}

std::string remote_entry_problem(std::string_view bytes, const EntryKey& key, CacheSections* sections) {
  CacheEntryParse parsed = parse_cache_entry(std::as_bytes(std::span(bytes.data(), bytes.size())), &key);
  if (!parsed.ok()) {
    return parsed.message();
  }
  const std::optional<CompiledEntry> entry = entry_from_sections(parsed.sections);
  if (!entry) {
    return "its sections make no compiled entry";
  }
  if (entry->arch != key.arch) {
    return fmt::format("its entry is for {}, not {}", entry->arch, key.arch);
  }
  if (sections != nullptr) {
    *sections = std::move(parsed.sections);
  }
  return {};
}

RemoteEntryStore::RemoteEntryStore(RemoteTierOptions options)
    : options_(std::move(options)), client_(options_.endpoint, options_.timeouts) {}

std::string RemoteEntryStore::redis_key(const EntryKey& key) const { return options_.prefix + key.digest(); }

void RemoteEntryStore::warn_once(const std::string& message) {
  if (!warned_.exchange(true)) {
    logger().warn("{}", message);
  } else {
    logger().debug("{}", message);
  }
}

void RemoteEntryStore::connection_failed(const std::string& what, const RedisResult& result) {
  counters_.connection_failures.fetch_add(1, std::memory_order_relaxed);
  down_until_ = Clock::now() + options_.backoff;
  warn_once(
      fmt::format("remote cache {}: {} failed ({}: {}); kernels are compiled locally, Redis is not asked "
                  "again for {} s",
                  options_.endpoint.url(), what, redis_status_name(result.status), result.message,
                  std::chrono::duration<double>(options_.backoff).count()));
}

std::optional<CacheSections> RemoteEntryStore::load(const EntryKey& key) {
  const std::lock_guard lock(mutex_);
  if (!remote_may_ask(Clock::now(), down_until_)) {
    counters_.skipped.fetch_add(1, std::memory_order_relaxed);
    counters_.misses.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  const std::string name = redis_key(key);
  RedisResult got = client_.get(name, kCacheMaxEntryBytes);
  if (got.connection_failed() || got.status == RedisStatus::kRefused) {
    connection_failed(fmt::format("GET {}", name), got);
    counters_.misses.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  std::string problem;
  CacheSections sections;
  if (got.status == RedisStatus::kTooLarge) {
    problem = got.message;
  } else if (got.status == RedisStatus::kOk) {
    problem = remote_entry_problem(got.value, key, &sections);
  }
  if (got.status == RedisStatus::kNil) {
    counters_.misses.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  if (!problem.empty()) {
    counters_.bad_entries.fetch_add(1, std::memory_order_relaxed);
    counters_.misses.fetch_add(1, std::memory_order_relaxed);
    const RedisResult dropped = client_.del(name);
    logger().warn(
        "bad remote cache entry {} for kernel {} ({}); {}", name, key.kernel, problem,
        dropped.ok() ? "dropped, the kernel will be rebuilt and republished" : "could not drop it: " + dropped.message);
    if (dropped.connection_failed()) {
      connection_failed(fmt::format("DEL {}", name), dropped);
    }
    return std::nullopt;
  }
  counters_.hits.fetch_add(1, std::memory_order_relaxed);
  return sections;
}

bool RemoteEntryStore::store(const EntryKey& key, const CacheSections& sections) {
  if (!cache_sections_problem(key, sections).empty()) {
    counters_.publish_failures.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  const std::string value = encode_cache_entry(key, sections);  // outside the lock: it copies the image
  const std::lock_guard lock(mutex_);
  const Clock::time_point now = Clock::now();
  if (!remote_may_ask(now, down_until_) || !remote_may_ask(now, publish_down_until_)) {
    counters_.skipped.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  const std::string name = redis_key(key);
  const RedisResult set = client_.set(name, value, options_.ttl);
  if (set.ok()) {
    counters_.publishes.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  counters_.publish_failures.fetch_add(1, std::memory_order_relaxed);
  if (set.connection_failed()) {
    connection_failed(fmt::format("SET {}", name), set);
  } else {
    // Full (OOM), read-only replica, ...: reads may still be served; publishing waits.
    publish_down_until_ = now + options_.backoff;
    warn_once(
        fmt::format("remote cache {}: SET {} ({} bytes) refused ({}); compiled kernels are not published for "
                    "{} s",
                    options_.endpoint.url(), name, value.size(), set.message,
                    std::chrono::duration<double>(options_.backoff).count()));
  }
  return false;
}

RemoteTierState RemoteEntryStore::probe() {
  const std::lock_guard lock(mutex_);
  RemoteTierState state;
  state.url = options_.endpoint.url();
  const RedisResult pong = client_.ping();
  if (!pong.ok()) {
    state.error = fmt::format("{}: {}", redis_status_name(pong.status), pong.message);
    return state;
  }
  state.reachable = true;
  const RedisResult counted = client_.count_prefix(options_.prefix);
  if (!counted.ok()) {
    state.error = fmt::format("counting keys: {}: {}", redis_status_name(counted.status), counted.message);
  }
  state.keys = counted.count;
  return state;
}

RemoteStats RemoteEntryStore::stats() const {
  return {counters_.hits.load(),      counters_.misses.load(),           counters_.bad_entries.load(),
          counters_.publishes.load(), counters_.publish_failures.load(), counters_.connection_failures.load(),
          counters_.skipped.load()};
}

EntryStore remote_entry_store(const std::shared_ptr<RemoteEntryStore>& tier) {
  if (tier == nullptr) {
    return {};
  }
  return EntryStore{[tier](const EntryKey& key) -> std::optional<EntrySections> {
                      if (key.nvrtc_version == kNoNvrtcVersion) {
                        return std::nullopt;
                      }
                      return tier->load(key);
                    },
                    [tier](const EntryKey& key, const EntrySections& sections) {
                      return key.nvrtc_version != kNoNvrtcVersion && tier->store(key, sections);
                    }};
}

std::shared_ptr<RemoteEntryStore> remote_tier_from(const std::optional<std::string>& option, const EnvLookup& env,
                                                   std::string_view option_name) {
  std::string origin(option_name);
  std::optional<std::string> url = option;
  if (!url) {
    origin = kRemoteCacheVariable;
    url = env ? env(kRemoteCacheVariable) : std::nullopt;
  }
  if (!url || url->empty()) {
    return nullptr;
  }
  RedisUrlParse parsed = parse_redis_url(*url);
  if (!parsed.endpoint) {
    throw ConfigError(
        fmt::format("{}='{}' is not a Redis URL: {}; expected {}", origin, *url, parsed.problem, kRedisUrlRule));
  }
  RemoteTierOptions options;
  options.endpoint = std::move(*parsed.endpoint);
  logger().debug("remote cache tier: {} (from {})", options.endpoint.url(), origin);
  return std::make_shared<RemoteEntryStore>(std::move(options));
}

}  // namespace metrale
