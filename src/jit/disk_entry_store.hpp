// jit/disk_entry_store.hpp: the DiskCache behind the registry's EntryStore seam.
// Invariants: a disabled DiskCache gives a disabled store (memory only); the name expression
// is part of the key (EntryKey::stored folds it into the options field), so two expressions can
// never share an entry; a store the cache refuses is a failed store (false), never an exception.
#pragma once

#include <memory>

#include "jit/disk_cache.hpp"
#include "jit/entry_key.hpp"
#include "jit/entry_store.hpp"

namespace metrale {

EntryStore disk_entry_store(const std::shared_ptr<DiskCache>& cache);

// DiskCache::open() (METRALE_CACHE_DIR, XDG_CACHE_HOME, ~/.cache/metrale), opened once per
// process, as a store: what a registry uses unless told otherwise.
const EntryStore& default_disk_entry_store();

}  // namespace metrale
