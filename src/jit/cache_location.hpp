// jit/cache_location.hpp: where the disk cache lives and whether a path may be trusted.
// Pure decisions only (no file system access): the caller passes the environment and the
// stat() fields, so every rule is testable without touching the disk.
// Invariants: a cache directory must be a directory owned by the current user or by root and
// not writable by group or others; an entry must be a regular file owned by the current user
// or by root and not writable by group or others (a root-owned cache in an image is shared
// read-only: its entries must be made readable, e.g. chmod -R a+rX). A planted CUBIN would run arbitrary code on the
// GPU.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <array>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "metrale/environment.hpp"

namespace metrale {

struct CacheDirChoice {
  std::optional<std::filesystem::path> dir;  // absent: no usable directory, see problem
  std::string source;                        // "METRALE_CACHE_DIR", "XDG_CACHE_HOME" or "HOME"
  std::string problem;                       // why there is no directory
};

// Why a path taken from an environment variable is unusable ("" when usable): it must be
// absolute, free of NUL bytes and shorter than PATH_MAX. Pure.
std::string env_path_problem(const char* variable, std::string_view value);

// The variables choose_cache_dir reads, in the order it reads them (a compile on a deadline worker
// gets a snapshot of exactly these: nvrtc_compile_variables).
inline constexpr std::array<const char*, 3> kCacheDirVariables{"METRALE_CACHE_DIR", "XDG_CACHE_HOME", "HOME"};

// METRALE_CACHE_DIR, else $XDG_CACHE_HOME/metrale, else $HOME/.cache/metrale; an empty value
// means unset. A bad METRALE_CACHE_DIR is a problem (the user asked for that directory); a
// relative XDG_CACHE_HOME is ignored, as the XDG specification says. Pure given `env`.
CacheDirChoice choose_cache_dir(const EnvLookup& env);

enum class CachePathRefusal {
  none,
  not_a_directory,
  not_a_regular_file,
  owned_by_other_user,
  writable_by_others,  // group or others may write
};

std::string_view cache_path_refusal_name(CachePathRefusal refusal);

// The rules for the cache directory and for one entry, from stat() fields. Pure.
CachePathRefusal cache_dir_refusal(const struct stat& info, uid_t current_user);
CachePathRefusal cache_entry_refusal(const struct stat& info, uid_t current_user);

// "cache directory /x is owned by uid 65534, not by the current user (uid 0)". Pure.
std::string describe_refusal(CachePathRefusal refusal, const std::filesystem::path& path, const struct stat& info,
                             uid_t current_user);

}  // namespace metrale
