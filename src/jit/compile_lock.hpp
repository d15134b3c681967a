// jit/compile_lock.hpp: one compile per key per machine. An exclusive flock on
// `<cache folder>/.lock-<key digest>`, held around "look in the disk cache -> compile -> publish",
// so a second process (or a second registry of this one) that waited on it looks in the cache again
// once it holds the lock, and finds the entry the first one published instead of compiling it too.
// Invariants:
// - Never a hang and never a failure: the lock is waited for at most the compile deadline
//   (jit/compile_deadline.hpp), then the caller compiles without it (kTimedOut); a lock file that
//   cannot be created or locked (a read-only cache, a file system without flock) means compiling
//   without it (kUnavailable), logged at debug. A lock only saves work: publishing stays by atomic
//   rename (jit/cache_file_io.hpp's write_file_atomically), so two compiles of one key still leave
//   one whole entry.
// - The lock file is opened O_CREAT|O_CLOEXEC|O_NOFOLLOW, mode 0600, in a folder whose trust the
//   caller checked (jit/cache_trust.hpp): it holds no data, only its lock. flock locks die with
//   their holder, so a file left by a process that crashed blocks no one (a stale file is only a
//   name). Lock files are kept, never unlinked: removing one while another process waits on it
//   would let a third lock a new file of the same name, and two compiles run at once.
// - flock is per open file description: two registries of one process lock each other as two
//   processes do. Across machines (NFS) flock is not relied on: there the atomic rename keeps the
//   cache whole and at worst each machine compiles once.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace metrale {

enum class CompileLockState {
  kHeld,         // this caller holds the lock
  kTimedOut,     // another holder kept it past the wait: compile without it
  kUnavailable,  // no lock file could be made or locked (read-only cache, ...): compile without it
};
std::string_view compile_lock_state_name(CompileLockState state);  // "held", "timed out", "unavailable"

// ".lock-<digest>", the digest reduced to [0-9a-zA-Z] and at most 64 characters (a key's digest is
// hex; anything else must not reach a path). Pure.
std::string compile_lock_file_name(std::string_view key_digest);

class CompileLock {
 public:
  CompileLock() = default;  // holds nothing (kUnavailable)
  CompileLock(CompileLock&& other) noexcept;
  CompileLock& operator=(CompileLock&& other) noexcept;
  CompileLock(const CompileLock&) = delete;
  CompileLock& operator=(const CompileLock&) = delete;
  ~CompileLock();  // releases the lock (closes the file); the file stays

  // Locks `dir`/compile_lock_file_name(key_digest), waiting at most `wait_s` seconds.
  static CompileLock acquire(const std::filesystem::path& dir, std::string_view key_digest, double wait_s);

  [[nodiscard]] CompileLockState state() const { return state_; }
  [[nodiscard]] bool held() const { return state_ == CompileLockState::kHeld; }
  [[nodiscard]] const std::string& problem() const { return problem_; }  // why not held
  [[nodiscard]] double waited_s() const { return waited_s_; }

 private:
  int fd_ = -1;
  CompileLockState state_ = CompileLockState::kUnavailable;
  std::string problem_;
  double waited_s_ = 0.0;
};

}  // namespace metrale
