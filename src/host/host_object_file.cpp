// host_object_file.cpp: the sealed host-JIT object file (host/host_object_file.hpp).
#include "host/host_object_file.hpp"

#include <sys/stat.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>

#include "ground/log.hpp"
#include "jit/cache_location.hpp"

namespace metrale::host {
namespace {

// 16 bytes; the last is the trailer's version.
constexpr std::string_view kMagic{"metrale-hostobj\x01", 16};
constexpr std::size_t kKeyAt = 16;
constexpr std::size_t kSizeAt = 32;
constexpr std::size_t kHashAt = 40;
constexpr std::size_t kReservedAt = 56;
constexpr auto kStaleWorkAge = std::chrono::hours(1);

void put_u64(std::string& out, std::size_t at, std::uint64_t value) {
  for (std::size_t i = 0; i < 8; ++i) {
    out[at + i] = static_cast<char>((value >> (8 * i)) & 0xFFu);
  }
}

std::uint64_t get_u64(std::string_view in, std::size_t at) {
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < 8; ++i) {
    value |= static_cast<std::uint64_t>(static_cast<unsigned char>(in[at + i])) << (8 * i);
  }
  return value;
}

// Over the object and the key field, so an edited key is caught as an edited object is.
XXH128_hash_t object_hash(std::string_view object, std::string_view key_field) {
  XXH3_state_t state;
  XXH3_128bits_reset(&state);
  XXH3_128bits_update(&state, object.data(), object.size());
  XXH3_128bits_update(&state, key_field.data(), key_field.size());
  return XXH3_128bits_digest(&state);
}

bool is_object_name(const std::string& name) { return !name.starts_with('.') && name.ends_with(".so"); }

}  // namespace

std::string seal_host_object(std::string_view object, std::string_view key) {
  std::string out(object);
  std::string trailer(kHostObjectTrailerBytes, '\0');
  trailer.replace(0, kMagic.size(), kMagic);
  trailer.replace(kKeyAt, std::min(key.size(), kHostObjectKeyChars), key.substr(0, kHostObjectKeyChars));
  const XXH128_hash_t hash = object_hash(object, std::string_view(trailer).substr(kKeyAt, kHostObjectKeyChars));
  put_u64(trailer, kSizeAt, object.size());
  put_u64(trailer, kHashAt, hash.high64);
  put_u64(trailer, kHashAt + 8, hash.low64);
  return out + trailer;
}

HostObjectCheck check_host_object(std::string_view bytes, std::string_view expected_key) {
  HostObjectCheck out;
  if (bytes.size() < kHostObjectTrailerBytes) {
    out.problem =
        fmt::format("truncated: {} bytes, shorter than its {}-byte trailer", bytes.size(), kHostObjectTrailerBytes);
    return out;
  }
  const std::string_view trailer = bytes.substr(bytes.size() - kHostObjectTrailerBytes);
  const std::string_view object = bytes.substr(0, bytes.size() - kHostObjectTrailerBytes);
  if (trailer.substr(0, kMagic.size()) != kMagic) {
    out.problem = "no metrale trailer at its end (truncated, edited, or written by an older library)";
    return out;
  }
  const std::string_view reserved = trailer.substr(kReservedAt);
  if (std::any_of(reserved.begin(), reserved.end(), [](char c) { return c != '\0'; })) {
    out.problem = "its trailer's reserved bytes are not zero";
    return out;
  }
  const std::uint64_t recorded = get_u64(trailer, kSizeAt);
  if (recorded != object.size()) {
    out.problem =
        fmt::format("truncated or extended: the object is {} bytes, its trailer records {}", object.size(), recorded);
    return out;
  }
  const std::string_view key_field = trailer.substr(kKeyAt, kHostObjectKeyChars);
  const XXH128_hash_t hash = object_hash(object, key_field);
  if (hash.high64 != get_u64(trailer, kHashAt) || hash.low64 != get_u64(trailer, kHashAt + 8)) {
    out.problem = "checksum mismatch: the object was modified after it was written";
    return out;
  }
  out.key = std::string(key_field.substr(0, std::min(key_field.find('\0'), key_field.size())));
  if (!expected_key.empty() && out.key != expected_key) {
    out.problem = fmt::format("it was built for key {}, not {}", out.key, expected_key);
    return out;
  }
  out.object_bytes = object.size();
  return out;
}

std::string host_object_key_of_name(std::string_view file_name) {
  if (!file_name.ends_with(".so")) {
    return {};
  }
  const std::string_view stem = file_name.substr(0, file_name.size() - 3);
  const std::size_t dot = stem.rfind('.');
  return dot == std::string_view::npos ? std::string() : std::string(stem.substr(dot + 1));
}

HostObjectRead read_host_object(const std::filesystem::path& path, std::string_view expected_key) {
  HostObjectRead out;
  out.file = read_back_file(path, ReadBackRules{kHostObjectMaxBytes, std::nullopt, std::nullopt});
  if (!out.file.ok()) {
    out.missing = out.file.rule == ReadBackRule::missing;
    out.problem = out.file.message;
    return out;
  }
  const uid_t me = ::geteuid();
  if (const CachePathRefusal refusal = cache_entry_refusal(out.file.info, me); refusal != CachePathRefusal::none) {
    out.problem = describe_refusal(refusal, path, out.file.info, me);
    return out;
  }
  const std::string key =
      expected_key.empty() ? host_object_key_of_name(path.filename().string()) : std::string(expected_key);
  if (const HostObjectCheck check = check_host_object(out.file.bytes, key); !check.problem.empty()) {
    out.problem = fmt::format("{}: {}", path.string(), check.problem);
  }
  out.file.bytes.clear();  // the loader maps the file; the copy served the checksum
  return out;
}

std::vector<HostObjectVerdict> verify_host_objects(const std::filesystem::path& dir) {
  std::vector<HostObjectVerdict> out;
  std::error_code error;
  for (std::filesystem::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    if (is_object_name(it->path().filename().string())) {
      HostObjectRead read = read_host_object(it->path(), {});
      out.push_back({it->path(), read.missing ? std::string() : std::move(read.problem)});
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
  return out;
}

std::size_t clear_host_objects(const std::filesystem::path& dir) {
  std::size_t removed = 0;
  std::vector<std::filesystem::path> objects;
  std::vector<std::filesystem::path> stale_work;
  std::error_code error;
  const auto now = std::filesystem::file_time_type::clock::now();
  for (std::filesystem::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    std::error_code ignored;
    if (is_object_name(name)) {
      objects.push_back(it->path());
    } else if (name.starts_with(".work-") && it->is_directory(ignored) && !it->is_symlink(ignored) &&
               now - it->last_write_time(ignored) > kStaleWorkAge) {
      stale_work.push_back(it->path());
    }
  }
  for (const auto& path : objects) {
    if (::unlink(path.c_str()) == 0) {
      ++removed;
    } else if (errno != ENOENT) {
      logger().warn("cannot remove host object {}: {}", path.string(), std::strerror(errno));
    }
  }
  for (const auto& path : stale_work) {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  return removed;
}

}  // namespace metrale::host
