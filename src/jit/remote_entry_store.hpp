// jit/remote_entry_store.hpp: the Redis remote cache tier (METRALE_REMOTE_CACHE), behind the
// registry's EntryStore seam: after memory, bundles and the disk, before NVRTC.
// Invariants:
// - The same complete key as the disk cache (EntryKey::stored, name expression folded in): the Redis
//   key is kRemoteKeyPrefix + EntryKey::digest(); the value is the disk cache's entry format
//   (cache_entry.hpp), whose stored key and checksum are checked before use, and whose sections
//   must make a CompiledEntry for the key's arch; anything else is a bad entry: dropped (DEL),
//   never used, so the caller recompiles and publishes the good one over it.
// - Never fails a call: Redis down, slow or full is a miss or a failed publish. The first trouble
//   logs one warning per tier (a runtime has its own), later ones go to debug; after a connection
//   failure nothing is asked for `backoff` (one connect or read timeout, then none), after a
//   refused write (full: OOM) nothing is published for `backoff`, but reads go on.
// - Thread-safe: one connection behind a mutex (compiles publish from several threads).
// - Trust: whoever can write the Redis keys is trusted; entries are checked for integrity (a
//   non-cryptographic checksum and the key), not signed.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "jit/cache_entry.hpp"
#include "jit/entry_store.hpp"
#include "jit/redis_client.hpp"
#include "metrale/environment.hpp"

namespace metrale {

// Every key the library writes starts with this (`metrale-jit cache remote` counts them).
inline constexpr std::string_view kRemoteKeyPrefix = "metrale:jit:v1:";
// Entries expire a week after they were published (a fetch does not extend it: GETEX needs Redis
// 6.2), so an old entry costs one fleet-wide recompile a week and a stale one leaves by itself.
inline constexpr std::chrono::seconds kRemoteEntryTtl{std::chrono::hours(24 * 7)};
inline constexpr std::chrono::milliseconds kRemoteBackoff{30000};
inline constexpr const char* kRemoteCacheVariable = "METRALE_REMOTE_CACHE";

struct RemoteTierOptions {
  RedisEndpoint endpoint;
  RedisTimeouts timeouts;  // 200 ms connect, 500 ms per read or write
  std::chrono::milliseconds backoff = kRemoteBackoff;
  std::chrono::seconds ttl = kRemoteEntryTtl;
  std::string prefix = std::string(kRemoteKeyPrefix);
};

struct RemoteStats {
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;       // absent, bad, or not asked (backing off)
  std::uint64_t bad_entries = 0;  // refused and dropped
  std::uint64_t publishes = 0;
  std::uint64_t publish_failures = 0;
  std::uint64_t connection_failures = 0;  // connects or commands that failed (each starts a back-off)
  std::uint64_t skipped = 0;              // loads and publishes not tried while backing off
};

// What `metrale-jit cache remote` shows.
struct RemoteTierState {
  std::string url;
  bool reachable = false;
  std::string error;       // why not reachable (or the count failed)
  std::uint64_t keys = 0;  // keys under the prefix
};

// Whether the tier asks Redis now: not before `down_until`. Pure.
[[nodiscard]] bool remote_may_ask(std::chrono::steady_clock::time_point now,
                                  std::optional<std::chrono::steady_clock::time_point> down_until);

// Why this entry is refused (empty: usable): the disk format's problem (checksum, key mismatch,
// ...) or sections that make no CompiledEntry for the key's arch. Pure.
[[nodiscard]] std::string remote_entry_problem(std::string_view bytes, const EntryKey& key, CacheSections* sections);

class RemoteEntryStore {
 public:
  explicit RemoteEntryStore(RemoteTierOptions options);

  [[nodiscard]] const RemoteTierOptions& options() const { return options_; }
  [[nodiscard]] std::string redis_key(const EntryKey& key) const;

  // nullopt on a miss, a bad entry (dropped) or a server that cannot be asked now.
  std::optional<CacheSections> load(const EntryKey& key);
  // False when not published (backing off, full, down, or sections the format cannot hold).
  bool store(const EntryKey& key, const CacheSections& sections);
  // Connects now (whatever the back-off), PINGs and counts the keys under the prefix.
  RemoteTierState probe();

  [[nodiscard]] RemoteStats stats() const;

 private:
  // A connection failure: back off, warn once. Call with mutex_ held.
  void connection_failed(const std::string& what, const RedisResult& result);
  void warn_once(const std::string& message);

  RemoteTierOptions options_;
  mutable std::mutex mutex_;
  RedisClient client_;
  std::optional<std::chrono::steady_clock::time_point> down_until_;          // all commands
  std::optional<std::chrono::steady_clock::time_point> publish_down_until_;  // SET only (full)
  std::atomic<bool> warned_{false};
  struct Counters {
    std::atomic<std::uint64_t> hits{0}, misses{0}, bad_entries{0}, publishes{0}, publish_failures{0},
        connection_failures{0}, skipped{0};
  } counters_;
};

// The tier as an EntryStore over registry keys. A process without NVRTC asks
// nothing (its keys name no compiler; the disk's any-compiler load is the fallback there).
EntryStore remote_entry_store(const std::shared_ptr<RemoteEntryStore>& tier);

// The tier RuntimeOptions::remote_cache (`option`) or else METRALE_REMOTE_CACHE names; null when
// neither does (an empty value names none, and an empty option turns the variable off).
// ConfigError naming the option (as `option_name`) or the variable, the value and kRedisUrlRule
// for a malformed URL.
std::shared_ptr<RemoteEntryStore> remote_tier_from(const std::optional<std::string>& option, const EnvLookup& env,
                                                   std::string_view option_name = "RuntimeOptions::remote_cache");

}  // namespace metrale
