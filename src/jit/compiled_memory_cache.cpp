// compiled_memory_cache.cpp: claim-or-wait on one map of shared futures, bounded FIFO.
#include "jit/compiled_memory_cache.hpp"

#include <algorithm>
#include <chrono>

namespace metrale {

CompiledMemoryCache::CompiledMemoryCache(std::size_t max_entries)
    : max_entries_(std::max<std::size_t>(max_entries, 1)) {}

void CompiledMemoryCache::evict_locked() {
  // Drops the oldest fulfilled keys; pending ones go back in order, still owned by their claim.
  std::deque<std::string> pending;
  while (entries_.size() > max_entries_ && !order_.empty()) {
    std::string key = std::move(order_.front());
    order_.pop_front();
    auto it = entries_.find(key);
    if (it == entries_.end()) {
      continue;
    }
    if (it->second.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
      entries_.erase(it);
    } else {
      pending.push_back(std::move(key));
    }
  }
  order_.insert(order_.begin(), pending.begin(), pending.end());
}

CompiledMemoryCache::Claim CompiledMemoryCache::claim(const std::string& key) {
  std::lock_guard lock(mutex_);
  if (auto it = entries_.find(key); it != entries_.end()) {
    return Claim{it->second, nullptr};
  }
  auto promise = std::make_shared<std::promise<EntryPtr>>();
  std::shared_future<EntryPtr> future = promise->get_future().share();
  entries_.emplace(key, future);
  order_.push_back(key);
  if (entries_.size() > max_entries_) {
    evict_locked();
  }
  return Claim{std::move(future), std::move(promise)};
}

void CompiledMemoryCache::forget(const std::string& key) {
  std::lock_guard lock(mutex_);
  entries_.erase(key);
}

std::size_t CompiledMemoryCache::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

void CompiledMemoryCache::clear() {
  std::lock_guard lock(mutex_);
  entries_.clear();
  order_.clear();
}

const std::shared_ptr<CompiledMemoryCache>& CompiledMemoryCache::process() {
  static const std::shared_ptr<CompiledMemoryCache> cache = std::make_shared<CompiledMemoryCache>();
  return cache;
}

}  // namespace metrale
