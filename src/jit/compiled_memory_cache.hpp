// jit/compiled_memory_cache.hpp: the in-process cache of compiled entries, shared by
// every registry of the process (one per process by default), keyed by EntryKey::joined().
// Invariants: the first caller to claim a key owns it and must fulfil it (success or a
// failed entry); every other caller, in any thread or registry, waits on the same future,
// so a variant is compiled once per process however many threads ask.
#pragma once

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

  Claim claim(const std::string& key);
  [[nodiscard]] std::size_t size() const;
  void clear();

  // The process-wide cache that registries use unless given another.
  static const std::shared_ptr<CompiledMemoryCache>& process();

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::shared_future<EntryPtr>> entries_;
};

}  // namespace metrale
