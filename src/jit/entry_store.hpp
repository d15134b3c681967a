// jit/entry_store.hpp: the seam between the registry and a persistent cache.
// The registry asks "load the entry for this key" and "store this entry"; the disk cache
// (disk_cache.hpp) is one implementation, a test's map another.
// Invariants: a store with no functions is "disabled" (memory only); load returning nullopt
// means "not there or not valid", and the registry then compiles; a failed store is not an
// error (the entry stays in memory).
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "jit/compile_lock.hpp"
#include "jit/compiled_entry.hpp"
#include "jit/entry_key.hpp"

namespace metrale {

struct EntryStore {
  std::function<std::optional<EntrySections>(const EntryKey&)> load;
  std::function<bool(const EntryKey&, const EntrySections&)> store;
  // Optional (empty: no lock): the machine-wide compile lock of a key (jit/compile_lock.hpp), waited
  // for at most the given seconds; held around look again -> compile -> store.
  std::function<CompileLock(const EntryKey&, double wait_s)> lock = {};

  [[nodiscard]] bool enabled() const { return load && store; }
};

}  // namespace metrale
