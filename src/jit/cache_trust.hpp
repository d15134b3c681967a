// jit/cache_trust.hpp: whether a cache folder may be used, judged on the disk the way ssh's
// StrictModes judges ~/.ssh, before anything is read from it or written to it.
// Invariants:
// - The cache root must be an absolute path; it and every folder of it this library creates
//   (verdicts/, host/) must be a directory owned by the current user (or root) and writable by
//   no group and no other user (cache_dir_refusal). Every folder above the root (its real path,
//   links resolved, up to /) must be owned by the current user or root and not writable by
//   group or others, unless it has the sticky bit (/tmp): there no one else can rename or remove
//   what this user owns, so the root cannot be swapped for another folder.
// - A refused folder yields its path and the rule broken, and nothing is created inside it; the
//   caller then stores nothing on disk (one log line, as the disk cache does).
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace metrale {

struct TrustedFolder {
  std::optional<std::filesystem::path> dir;  // root/sub, lexically normal; absent: see problem
  std::string problem;                       // "/x/cache is owned by uid 65534, ..."
};

// Checks the folders above `root`, creates `root` and then `sub` (a single name, or empty for
// the root itself) with mode 0700 where missing, and checks each. File system access only
// through stat/mkdir/realpath; thread-safe.
TrustedFolder trusted_cache_folder(const std::filesystem::path& root, std::string_view sub = {});

// The rule for one folder above a cache root, from its stat() fields: owned by `current_user`
// or root, and not writable by group or others unless sticky. "" when it holds. Pure.
std::string cache_ancestor_problem(const std::filesystem::path& path, const struct stat& info, uid_t current_user);

}  // namespace metrale
