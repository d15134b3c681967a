// jit/disk_entry_store.hpp: the DiskCache behind the registry's EntryStore seam.
// Invariants: a disabled DiskCache gives a disabled store (memory only); the name expression
// is part of the key (folded into the options field), so two expressions can never share an
// entry; a store the cache refuses is a failed store (false), never an exception.
#pragma once

#include <memory>

#include "jit/cache_key.hpp"
#include "jit/disk_cache.hpp"
#include "jit/entry_store.hpp"

namespace metrale {

// The cache key of a registry entry. Pure.
CacheKey to_cache_key(const EntryKey& key);

EntryStore disk_entry_store(const std::shared_ptr<DiskCache>& cache);

// DiskCache::open() (METRALE_CACHE_DIR, XDG_CACHE_HOME, ~/.cache/metrale), opened once per
// process, as a store: what a registry uses unless told otherwise.
const EntryStore& default_disk_entry_store();

}  // namespace metrale
