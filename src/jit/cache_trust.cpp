// jit/cache_trust.cpp: the ssh-like check of a cache root's folder chain (cache_trust.hpp).
// The folders above the root are checked before anything is created, so a refused chain gets
// no new folder; the whole chain is checked again once the root exists.
#include "jit/cache_trust.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>

#include "jit/cache_file_io.hpp"
#include "jit/cache_location.hpp"

namespace metrale {

namespace {

// The real path of `path` (links resolved), or the reason there is none.
std::optional<std::filesystem::path> real_path(const std::filesystem::path& path, std::string& problem) {
  char buffer[PATH_MAX];
  if (::realpath(path.c_str(), buffer) == nullptr) {
    problem = fmt::format("cannot resolve {}: {}", path.string(), errno_text(errno));
    return std::nullopt;
  }
  return std::filesystem::path(buffer);
}

// Every folder from / down to `real` (a real path): those above it by the ancestor rule, `real`
// itself by the ancestor rule or, when `strict_last`, by the cache directory rule.
std::string chain_problem(const std::filesystem::path& real, bool strict_last, uid_t me) {
  std::filesystem::path partial;
  for (const auto& part : real) {
    partial /= part;
    struct stat info {};
    if (::stat(partial.c_str(), &info) != 0) {
      return fmt::format("cannot stat {}: {}", partial.string(), errno_text(errno));
    }
    const bool last = partial == real;
    if (last && strict_last) {
      if (CachePathRefusal refusal = cache_dir_refusal(info, me); refusal != CachePathRefusal::none) {
        return describe_refusal(refusal, real, info, me);
      }
    } else if (std::string problem = cache_ancestor_problem(partial, info, me); !problem.empty()) {
      return problem;
    }
  }
  return {};
}

// The deepest existing folder of `path` (itself when it exists), or the reason a stat failed.
std::optional<std::filesystem::path> deepest_existing(std::filesystem::path path, std::string& problem) {
  while (true) {
    struct stat info {};
    if (::stat(path.c_str(), &info) == 0) {
      return path;
    }
    if (errno != ENOENT || path == path.parent_path()) {
      problem = fmt::format("cannot stat {}: {}", path.string(), errno_text(errno));
      return std::nullopt;
    }
    path = path.parent_path();
  }
}

}  // namespace

std::string cache_ancestor_problem(const std::filesystem::path& path, const struct stat& info, uid_t current_user) {
  if (!S_ISDIR(info.st_mode)) {
    return fmt::format("{} (a folder above the cache) is not a directory", path.string());
  }
  if (info.st_uid != current_user && info.st_uid != 0) {
    return fmt::format(
        "{} (a folder above the cache) is owned by uid {}, not by the current user (uid {}) or root: its owner "
        "could replace the cache",
        path.string(), info.st_uid, current_user);
  }
  if ((info.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (info.st_mode & S_ISVTX) == 0) {
    return fmt::format(
        "{} (a folder above the cache) has mode {:04o}: writable by group or others without the sticky bit, so "
        "the cache could be replaced",
        path.string(), info.st_mode & 07777);
  }
  return {};
}

TrustedFolder trusted_cache_folder(const std::filesystem::path& root, std::string_view sub) {
  if (std::string problem = env_path_problem("the cache directory", root.native()); !problem.empty()) {
    return {std::nullopt, std::move(problem)};
  }
  const std::filesystem::path clean = root.lexically_normal();
  const uid_t me = ::geteuid();
  std::string problem;
  // Before creating anything: the existing part of the chain.
  const std::optional<std::filesystem::path> existing = deepest_existing(clean, problem);
  if (!existing) {
    return {std::nullopt, std::move(problem)};
  }
  std::optional<std::filesystem::path> real = real_path(*existing, problem);
  if (!real) {
    return {std::nullopt, std::move(problem)};
  }
  // The folders above the deepest existing one, and it too unless it is the root (judged below,
  // once make_private_directories has named a root that is no directory).
  if (problem = chain_problem(*existing == clean ? real->parent_path() : *real, false, me); !problem.empty()) {
    return {std::nullopt, std::move(problem)};
  }
  if (CacheIoResult made = make_private_directories(clean); !made.ok) {
    return {std::nullopt, made.message};
  }
  real = real_path(clean, problem);
  if (!real) {
    return {std::nullopt, std::move(problem)};
  }
  if (problem = chain_problem(*real, true, me); !problem.empty()) {
    return {std::nullopt, std::move(problem)};
  }
  if (sub.empty()) {
    return {clean, {}};
  }
  const std::filesystem::path folder = clean / sub;
  if (::mkdir(folder.c_str(), 0700) != 0 && errno != EEXIST) {
    return {std::nullopt, fmt::format("cannot create {}: {}", folder.string(), errno_text(errno))};
  }
  struct stat info {};
  if (::lstat(folder.c_str(), &info) != 0) {
    return {std::nullopt, fmt::format("cannot stat {}: {}", folder.string(), errno_text(errno))};
  }
  if (CachePathRefusal refusal = cache_dir_refusal(info, me); refusal != CachePathRefusal::none) {
    return {std::nullopt, describe_refusal(refusal, folder, info, me)};
  }
  return {folder, {}};
}

}  // namespace metrale
