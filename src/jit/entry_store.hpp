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

namespace metrale {

// What identifies one compiled variant: everything that changes the compiler's output.
struct EntryKey {
  std::string kernel;         // "ssm_ba_gates_hopper"
  std::string params_tag;     // "b256l64g8"
  std::string arch;           // "sm_90"
  std::string nvrtc_version;  // "13-0"
  std::string options;        // the option list, space-joined
  std::string source_digest;  // SourceSet::digest of the source (and its includes)
  std::string name_expression;

  // A single string with every field, for in-memory maps. Pure.
  [[nodiscard]] std::string joined() const;
  friend bool operator==(const EntryKey&, const EntryKey&) = default;
};

struct EntryStore {
  std::function<std::optional<EntrySections>(const EntryKey&)> load;
  std::function<bool(const EntryKey&, const EntrySections&)> store;
  // Optional (empty: no lock): the machine-wide compile lock of a key (jit/compile_lock.hpp), waited
  // for at most the given seconds; held around look again -> compile -> store.
  std::function<CompileLock(const EntryKey&, double wait_s)> lock = {};

  [[nodiscard]] bool enabled() const { return load && store; }
};

}  // namespace metrale
