// jit/compiled_memory_cache.hpp: the in-process cache of compiled entries, shared by
// every registry of the process (one per process by default), keyed by EntryKey::joined().
// Invariants: the first caller to claim a key owns it and must fulfil it (success or a
// failed entry); every other caller, in any thread or registry, waits on the same future,
// so a variant is compiled once per process however many threads ask. The cache holds at
// most max_entries keys: past that, the oldest fulfilled ones are dropped (never a pending
// one; a dropped entry stays alive in whoever holds it, and is rebuilt from disk if asked
// again). A failed compile is an entry like any other, so it is remembered exactly for its
// key: the same source digest (the source and its includes) and options; a changed template
// or a newly added header gives another key and compiles again.
#pragma once

#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "jit/compiled_entry.hpp"

namespace metrale {

class CompiledMemoryCache {
 public:
  using EntryPtr = std::shared_ptr<const CompiledEntry>;

  struct Claim {
    std::shared_future<EntryPtr> future;
    std::shared_ptr<std::promise<EntryPtr>> promise;  // non-null: this caller owns the key

    [[nodiscard]] bool owned() const { return promise != nullptr; }
  };

  static constexpr std::size_t kDefaultMaxEntries = 4096;

  explicit CompiledMemoryCache(std::size_t max_entries = kDefaultMaxEntries);

  Claim claim(const std::string& key);
  // Drops `key` (its claimants keep their future): the next claim compiles again.
  void forget(const std::string& key);
  [[nodiscard]] std::size_t size() const;
  void clear();

  // The process-wide cache that registries use unless given another.
  static const std::shared_ptr<CompiledMemoryCache>& process();

 private:
  void evict_locked();

  std::size_t max_entries_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::shared_future<EntryPtr>> entries_;
  std::deque<std::string> order_;  // keys in claim order (may name keys already dropped)
};

}  // namespace metrale
