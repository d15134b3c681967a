// cache_location.cpp: the cache directory's location and the trust rules for its files.
#include "jit/cache_location.hpp"

#include <fmt/format.h>

#include <climits>
#include <cstdlib>

namespace metrale {

std::string env_path_problem(const char* variable, std::string_view value) {
  if (value.empty()) {
    return fmt::format("{} is empty", variable);
  }
  if (value.find('\0') != std::string_view::npos) {
    return fmt::format("{} contains a NUL byte", variable);
  }
  if (value.size() >= PATH_MAX) {
    return fmt::format("{} is {} bytes long, the limit is {}", variable, value.size(), PATH_MAX - 1);
  }
  if (value.front() != '/') {
    return fmt::format("{}='{}' is not an absolute path", variable, value);
  }
  return {};
}

CacheDirChoice choose_cache_dir(const EnvLookup& env) {
  auto non_empty = [&](const char* name) -> std::optional<std::string> {
    auto value = env(name);
    if (value && value->empty()) {
      return std::nullopt;
    }
    return value;
  };
  if (auto explicit_dir = non_empty("METRALE_CACHE_DIR")) {
    if (auto problem = env_path_problem("METRALE_CACHE_DIR", *explicit_dir); !problem.empty()) {
      return {std::nullopt, "METRALE_CACHE_DIR", problem};
    }
    return {std::filesystem::path(*explicit_dir), "METRALE_CACHE_DIR", {}};
  }
  if (auto xdg = non_empty("XDG_CACHE_HOME"); xdg && env_path_problem("XDG_CACHE_HOME", *xdg).empty()) {
    return {std::filesystem::path(*xdg) / "metrale", "XDG_CACHE_HOME", {}};
  }
  if (auto home = non_empty("HOME")) {
    if (auto problem = env_path_problem("HOME", *home); !problem.empty()) {
      return {std::nullopt, "HOME", problem};
    }
    return {std::filesystem::path(*home) / ".cache" / "metrale", "HOME", {}};
  }
  return {std::nullopt, {}, "none of METRALE_CACHE_DIR, XDG_CACHE_HOME and HOME is set"};
}

std::string_view cache_path_refusal_name(CachePathRefusal refusal) {
  switch (refusal) {
    case CachePathRefusal::none:
      return "accepted";
    case CachePathRefusal::not_a_directory:
      return "not a directory";
    case CachePathRefusal::not_a_regular_file:
      return "not a regular file";
    case CachePathRefusal::owned_by_other_user:
      return "owned by another user";
    case CachePathRefusal::writable_by_others:
      return "writable by group or others";
  }
  return "unknown refusal";
}

namespace {

// Root's files are trusted too: root can replace this process's code anyway, and a cache
// prepared by root in an image (read-only for the users) is the shared-cache case.
CachePathRefusal ownership_refusal(const struct stat& info, uid_t current_user) {
  if (info.st_uid != current_user && info.st_uid != 0) {
    return CachePathRefusal::owned_by_other_user;
  }
  if ((info.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return CachePathRefusal::writable_by_others;
  }
  return CachePathRefusal::none;
}

}  // namespace

CachePathRefusal cache_dir_refusal(const struct stat& info, uid_t current_user) {
  if (!S_ISDIR(info.st_mode)) {
    return CachePathRefusal::not_a_directory;
  }
  return ownership_refusal(info, current_user);
}

CachePathRefusal cache_entry_refusal(const struct stat& info, uid_t current_user) {
  if (!S_ISREG(info.st_mode)) {
    return CachePathRefusal::not_a_regular_file;
  }
  return ownership_refusal(info, current_user);
}

std::string describe_refusal(CachePathRefusal refusal, const std::filesystem::path& path, const struct stat& info,
                             uid_t current_user) {
  switch (refusal) {
    case CachePathRefusal::owned_by_other_user:
      return fmt::format("{} is owned by uid {}, not by the current user (uid {})", path.string(), info.st_uid,
                         current_user);
    case CachePathRefusal::writable_by_others:
      return fmt::format(
          "{} has mode {:04o}, writable by group or others (expected 0700 for a directory, 0600 "
          "for an entry)",
          path.string(), info.st_mode & 07777);
    default:
      return fmt::format("{} is {}", path.string(), cache_path_refusal_name(refusal));
  }
}

}  // namespace metrale
