// disk_entry_store.cpp: EntryKey -> EntryKey and the two seam functions over a DiskCache.
#include "jit/disk_entry_store.hpp"

#include "ground/log.hpp"
#include "jit/nvrtc_compiler.hpp"
#include "metrale/error.hpp"

namespace metrale {

EntryStore disk_entry_store(const std::shared_ptr<DiskCache>& cache) {
  if (cache == nullptr || !cache->enabled()) {
    return {};
  }
  return EntryStore{
      [cache](const EntryKey& key) {
        // Without NVRTC (nothing could be compiled anyway) any compiler's entry will do.
        return key.nvrtc_version == kNoNvrtcVersion ? cache->load_from_any_compiler(key) : cache->load(key);
      },
      [cache](const EntryKey& key, const EntrySections& sections) {
        try {
          return cache->store(key, sections);
        } catch (const ArgumentError& error) {
          logger().warn("kernel {}: entry not cached on disk: {}", key.kernel, error.what());
          return false;
        }
      },
      [cache](const EntryKey& key, double wait_s) {
        // A cache that stores nothing has nothing to wait for: compile without a lock.
        return cache->writable() ? CompileLock::acquire(cache->dir(), key.digest(), wait_s) : CompileLock{};
      }};
}

const EntryStore& default_disk_entry_store() {
  static const EntryStore store = disk_entry_store(std::make_shared<DiskCache>(DiskCache::open()));
  return store;
}

}  // namespace metrale
