// jit/cache_file_io.hpp: the disk cache's file system effects, each returning a value
// that names the path and the errno text on failure (never throwing for I/O errors).
// Invariants: entries are read through O_NOFOLLOW and judged on the opened file's fstat(), so
// the file checked is the file read; writes go to a temp file in the same directory (name
// unique per process, thread and call, created O_EXCL with mode 0600), are fsync'ed and
// renamed over the entry, so readers see the old file or the new one, never a torn one; a
// failed write removes its temp file.
#pragma once

#include <sys/stat.h>

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "jit/cache_location.hpp"

namespace metrale {

struct CacheIoResult {
  bool ok = true;
  int error = 0;        // errno of the failing call, 0 when the failure is not an errno
  std::string message;  // "write /dir/.x.tmp...: No space left on device"
};

// Creates `dir` and missing parents with mode 0700 (an existing directory is left as it is).
CacheIoResult make_private_directories(const std::filesystem::path& dir);

enum class CacheReadStatus { ok, missing, refused, too_large, failed };

struct CacheReadResult {
  CacheReadStatus status = CacheReadStatus::failed;
  std::string bytes;
  struct stat info {};  // of the opened file (valid unless missing/failed before fstat)
  CachePathRefusal refusal = CachePathRefusal::none;
  std::string message;
};

// Reads one entry by the read-back rules (jit/read_back_file.hpp: no links, regular files only,
// kCacheMaxEntryBytes), refusing files cache_entry_refusal() rejects.
CacheReadResult read_cache_file(const std::filesystem::path& path, uid_t current_user);

// Writes `bytes` to dir/name through a temp file + fsync + rename.
CacheIoResult write_file_atomically(const std::filesystem::path& dir, const std::string& name,
                                    const std::string& bytes);

// The points of a write where a fault-injection test stops the writer (a killed process must
// leave no torn entry at any of them).
enum class CacheWriteStage { kHalfWritten, kBeforeRename };
// Called at each stage of every write_file_atomically in this process; null (the default) calls
// nothing. For tests, which set it in a forked child.
using CacheWriteProbe = void (*)(CacheWriteStage stage);
void set_cache_write_probe(CacheWriteProbe probe);

// Removes `path` only while it is still the file described by `info` (same device and inode),
// so a bad entry's removal does not delete a good one another process just renamed there.
bool remove_if_same_file(const std::filesystem::path& path, const struct stat& info);

// ".<name>.tmp.<pid>.<thread>.<n>": temp names start with '.', entries never do. Pure test.
bool is_cache_temp_name(std::string_view file_name);
bool is_cache_entry_name(std::string_view file_name);

// Makes SIGXFSZ ignored (if it is at its default action) so that a file-size limit
// (RLIMIT_FSIZE) fails a write with EFBIG instead of killing the process. Once per process.
void ignore_file_size_signal();

// "No space left on device". Thread-safe.
std::string errno_text(int error);

}  // namespace metrale
