// compiled_memory_cache.cpp: claim-or-wait on one map of shared futures.
#include "jit/compiled_memory_cache.hpp"

namespace metrale {

CompiledMemoryCache::Claim CompiledMemoryCache::claim(const std::string& key) {
  std::lock_guard lock(mutex_);
  if (auto it = entries_.find(key); it != entries_.end()) {
    return Claim{it->second, nullptr};
  }
  auto promise = std::make_shared<std::promise<EntryPtr>>();
  std::shared_future<EntryPtr> future = promise->get_future().share();
  entries_.emplace(key, future);
  return Claim{std::move(future), std::move(promise)};
}

std::size_t CompiledMemoryCache::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

void CompiledMemoryCache::clear() {
  std::lock_guard lock(mutex_);
  entries_.clear();
}

const std::shared_ptr<CompiledMemoryCache>& CompiledMemoryCache::process() {
  static const std::shared_ptr<CompiledMemoryCache> cache = std::make_shared<CompiledMemoryCache>();
  return cache;
}

}  // namespace metrale
