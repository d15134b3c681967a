// host/host_object_cache.hpp: the folder of the host JIT's sealed objects (host/host_object_file.hpp)
// and the steps around a compile: where a key's object lives, finding a sealed one, the
// machine-wide compile lock of a key (jit/compile_lock.hpp), and publishing a fresh one.
// Invariants:
// - The folder is a trusted cache folder (jit/cache_trust.hpp: absolute, the user's, 0700, its
//   chain unswappable) or else a private one (mkdtemp) removed with the cache; a private folder is
//   shared with no one, so it takes no lock.
// - find() hands out only an object whose seal holds; a bad one is removed (only while it is still
//   the file judged, so another process's fresh one stays) and reported as missing.
// - publish() is by write_file_atomically (temp file, fsync, rename): a reader sees the old file,
//   no file or the whole new one, never a part; two processes publishing one key leave one whole
//   object. The lock only saves the second compile.
// Not thread-safe: its HostJit calls it under its own mutex.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "jit/compile_lock.hpp"
#include "jit/read_back_file.hpp"

namespace metrale::host {

struct HostObjectPublish {
  std::optional<ReadBackFile> file;  // the published object, read back and checked; absent: problem
  std::string problem;
};

class HostObjectCache {
 public:
  // `requested`: the folder asked for (nullopt: a private one).
  explicit HostObjectCache(std::optional<std::filesystem::path> requested);
  HostObjectCache(const HostObjectCache&) = delete;
  HostObjectCache& operator=(const HostObjectCache&) = delete;
  ~HostObjectCache();  // removes a private folder (mapped objects stay valid once unlinked)

  // The folder, chosen on first use (a refused one logged once, then the private folder).
  const std::filesystem::path& dir();
  [[nodiscard]] bool is_private() const { return private_dir_; }

  // "<kernel>.<params>.<arch>.<16 hex of the key digest>.so" in dir().
  std::filesystem::path object_path(std::string_view kernel, std::string_view params_tag, std::string_view arch,
                                    std::string_view key_digest);

  // The sealed object at `object` for `object_key`, read and checked; nullopt when there is none
  // or it was bad (then removed, the reason logged).
  std::optional<ReadBackFile> find(const std::filesystem::path& object, const std::string& object_key);

  // The compile lock of `key_digest` in dir(), waited for at most `wait_s`; a private folder
  // answers one holding nothing (kUnavailable) at once.
  CompileLock lock(std::string_view key_digest, double wait_s);

  // Seals `bytes` for `object_key` and publishes them as `object`, then reads the file back.
  HostObjectPublish publish(const std::filesystem::path& object, const std::string& object_key,
                            const std::string& bytes);

 private:
  std::optional<std::filesystem::path> requested_;
  std::optional<std::filesystem::path> dir_;
  bool private_dir_ = false;
};

}  // namespace metrale::host
