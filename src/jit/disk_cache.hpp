// jit/disk_cache.hpp: the on-disk cache of compiled kernels, as named byte sections
// under a readable file name per EntryKey (the cache knows nothing of kernels beyond the key).
// Invariants:
// - Never a crash and never a wrong or foreign kernel: an entry is returned only if its
//   checksum holds, its stored key equals the requested one, and it is a regular file owned
//   by the current user (or root) in a directory owned by the current user (or root) and not
//   writable by others. A directory this user cannot write is read, never written (one warning).
// - A bad entry is removed (and so rebuilt by the caller); an untrusted one is skipped.
// - An unusable directory or a failing write means memory only: disabled() or writes
//   stopped, with one warning per process, the path and the errno text.
// - Thread-safe: every member may be called from several threads at once; many processes
//   may share one directory (temp file + fsync + rename).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "jit/cache_entry.hpp"
#include "jit/entry_key.hpp"

namespace metrale {

struct CacheStats {
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;       // includes loads that found a bad or untrusted entry
  std::uint64_t bad_entries = 0;  // corrupt, mismatched or untrusted entries met by load()
  std::uint64_t writes = 0;
  std::uint64_t write_failures = 0;
};

struct CacheEntryInfo {
  std::filesystem::path path;
  std::uintmax_t bytes = 0;
  std::string kernel, params_tag, arch;  // empty when the entry cannot be parsed
  std::chrono::seconds age{0};
};

struct CacheVerifyResult {
  std::filesystem::path path;
  bool ok = false;
  std::string problem;  // "checksum mismatch: ...", "owned by another user", ...
};

class DiskCache {
 public:
  // METRALE_CACHE_DIR, else $XDG_CACHE_HOME/metrale, else $HOME/.cache/metrale.
  static DiskCache open();
  static DiskCache open_at(const std::filesystem::path& dir);
  // A cache that stores nothing (e.g. the user turned it off); logs nothing.
  static DiskCache disabled(std::string reason);

  DiskCache(DiskCache&&) noexcept = default;
  DiskCache& operator=(DiskCache&&) noexcept = default;
  DiskCache(const DiskCache&) = delete;
  DiskCache& operator=(const DiskCache&) = delete;
  ~DiskCache() = default;

  [[nodiscard]] bool enabled() const { return disabled_reason_.empty(); }
  [[nodiscard]] const std::string& disabled_reason() const { return disabled_reason_; }
  [[nodiscard]] const std::filesystem::path& dir() const { return dir_; }
  // False once a write failed: the cache then serves loads only (memory only for new kernels).
  [[nodiscard]] bool writable() const;

  // nullopt on a miss or a bad entry (removed, reason logged at warn) or an untrusted one (skipped).
  std::optional<CacheSections> load(const EntryKey& key);
  // For a process without NVRTC: the entry whose key equals `key` in every field but the
  // compiler's, written by any NVRTC (the newest version's, by number, when several are). A
  // CUBIN is machine code for its arch whichever compiler built it; with a compiler present,
  // load() keys by that compiler so an upgrade recompiles.
  std::optional<CacheSections> load_from_any_compiler(const EntryKey& key);
  // False on failure (one warning per process). Throws ArgumentError for sections the format
  // cannot hold (empty or repeated names, sizes past the limits).
  bool store(const EntryKey& key, const CacheSections& sections);

  // Every entry file (name ending .cubin, not a temp file), sorted by name.
  [[nodiscard]] std::vector<CacheEntryInfo> list() const;
  // Every entry checked fully (trust, checksum, and that its name matches its stored key).
  [[nodiscard]] std::vector<CacheVerifyResult> verify() const;
  // Removes the entries and temp files left by writers that died more than an hour ago;
  // other files and the directory stay. Returns the number of entries removed.
  std::size_t clear();

  [[nodiscard]] CacheStats stats() const;

 private:
  struct Counters {
    std::atomic<std::uint64_t> hits{0}, misses{0}, bad_entries{0}, writes{0}, write_failures{0};
    std::atomic<bool> writes_stopped{false};
  };

  DiskCache(std::filesystem::path dir, std::string disabled_reason);
  // disabled(), with the once-per-process warning that open()/open_at() give when they must fall back.
  static DiskCache refuse(std::string reason);
  std::optional<CacheSections> miss();

  std::filesystem::path dir_;
  std::string disabled_reason_;
  std::unique_ptr<Counters> counters_;
};

}  // namespace metrale
