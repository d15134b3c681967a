// host/host_object_cache.cpp: the object folder's choice, lookup, lock and publication, moved out
// of host_jit.cpp (which keeps the key, the compile and the load).
#include "host/host_object_cache.hpp"

#include <fmt/format.h>
#include <stdlib.h>  // NOLINT(modernize-deprecated-headers): mkdtemp

#include "ground/log.hpp"
#include "host/host_object_file.hpp"
#include "jit/cache_file_io.hpp"
#include "jit/cache_trust.hpp"
#include "jit/entry_key.hpp"

namespace metrale::host {

HostObjectCache::HostObjectCache(std::optional<std::filesystem::path> requested) : requested_(std::move(requested)) {}

HostObjectCache::~HostObjectCache() {
  if (private_dir_ && dir_) {
    std::error_code ignored;  // mapped objects stay valid once unlinked
    std::filesystem::remove_all(*dir_, ignored);
  }
}

const std::filesystem::path& HostObjectCache::dir() {
  if (dir_) {
    return *dir_;
  }
  if (requested_) {
    // The folder is judged as a cache root of its own (the runtime's is <cache>/host, whose root
    // is then one of the folders above it): itself 0700 and the user's, its chain unswappable.
    const TrustedFolder trusted = trusted_cache_folder(*requested_);
    if (trusted.dir) {
      dir_ = *trusted.dir;
      return *dir_;
    }
    logger().warn(
        "host JIT: refusing cache directory {}; its objects go to a private folder, not reused across "
        "processes",
        trusted.problem);
  }
  std::string pattern = (std::filesystem::temp_directory_path() / "metrale-host-jit-XXXXXX").string();
  dir_ = ::mkdtemp(pattern.data()) != nullptr ? std::filesystem::path(pattern) : std::filesystem::temp_directory_path();
  private_dir_ = dir_ != std::filesystem::temp_directory_path();
  return *dir_;
}

std::filesystem::path HostObjectCache::object_path(std::string_view kernel, std::string_view params_tag,
                                                   std::string_view arch, std::string_view key_digest) {
  return dir() / fmt::format("{}.{}.{}.{}.so", sanitize_cache_name_part(std::string(kernel), 48),
                             sanitize_cache_name_part(std::string(params_tag), 48), arch, key_digest.substr(0, 16));
}

std::optional<ReadBackFile> HostObjectCache::find(const std::filesystem::path& object, const std::string& object_key) {
  HostObjectRead cached = read_host_object(object, object_key);
  if (cached.missing) {
    return std::nullopt;
  }
  if (!cached.problem.empty()) {
    // Removed only while it is still the file judged, so another process's fresh one stays.
    const bool removed = cached.file.info.st_ino != 0 && remove_if_same_file(object, cached.file.info);
    logger().warn("host JIT: {}; not loaded, {}compiled again", cached.problem, removed ? "removed and " : "");
    return std::nullopt;
  }
  return std::move(cached.file);
}

CompileLock HostObjectCache::lock(std::string_view key_digest, double wait_s) {
  const std::filesystem::path& folder = dir();
  if (private_dir_) {
    return {};  // no other process looks here
  }
  return CompileLock::acquire(folder, key_digest, wait_s);
}

HostObjectPublish HostObjectCache::publish(const std::filesystem::path& object, const std::string& object_key,
                                           const std::string& bytes) {
  // Kept sealed (host/host_object_file.hpp: its size, checksum and key in a trailer), written to a
  // temp file, fsync'ed and renamed (jit/cache_file_io.hpp), owner-only whatever the umask.
  const CacheIoResult kept =
      write_file_atomically(object.parent_path(), object.filename().string(), seal_host_object(bytes, object_key));
  if (!kept.ok) {
    return {std::nullopt, fmt::format("cannot keep the object as {}: {}", object.string(), kept.message)};
  }
  HostObjectRead fresh = read_host_object(object, object_key);
  if (!fresh.problem.empty()) {
    return {std::nullopt, std::move(fresh.problem)};
  }
  return {std::move(fresh.file), {}};
}

}  // namespace metrale::host
