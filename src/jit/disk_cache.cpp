// disk_cache.cpp: DiskCache, tying the key, the entry format, the trust rules and the file
// effects together. Warnings that could repeat on every kernel (disabled cache, failing
// writes) are logged once per process; a bad entry is logged each time, it is an event.
#include "jit/disk_cache.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <span>
#include <string_view>
#include <utility>

#include "ground/log.hpp"
#include "jit/cache_file_io.hpp"
#include "jit/cache_location.hpp"
#include "jit/cache_trust.hpp"
#include "metrale/error.hpp"

namespace metrale {

namespace {

// The NVRTC version an entry's file name carries right after `prefix_size` characters
// ("13-0+1f2e..." -> {13, 0}), compared as numbers so 13.0 ranks above 9.2; {-1, -1} when it
// does not parse, which ranks below every real compiler.
std::pair<long, long> compiler_rank(std::string_view file, std::size_t prefix_size) {
  const std::string_view rest = file.substr(std::min(prefix_size, file.size()));
  const char* const end = rest.data() + rest.size();
  long major = -1;
  long minor = -1;
  const auto [after_major, major_error] = std::from_chars(rest.data(), end, major);
  if (major_error != std::errc{} || after_major == end || *after_major != '-') {
    return {-1, -1};
  }
  const auto [after_minor, minor_error] = std::from_chars(after_major + 1, end, minor);
  if (minor_error != std::errc{}) {
    return {-1, -1};
  }
  return {major, minor};
}

std::atomic<bool> g_disabled_warned{false};
std::atomic<bool> g_write_failure_warned{false};
std::atomic<bool> g_read_only_warned{false};

constexpr auto kStaleTempAge = std::chrono::hours(1);

void warn_once(std::atomic<bool>& flag, const std::string& message) {
  if (!flag.exchange(true)) {
    logger().warn("{}", message);
  } else {
    logger().debug("{}", message);
  }
}

std::span<const std::byte> as_byte_span(const std::string& bytes) {
  return std::as_bytes(std::span(bytes.data(), bytes.size()));
}

std::chrono::seconds age_of(const struct stat& info) {
  const auto now = std::chrono::system_clock::now();
  const auto modified = std::chrono::system_clock::from_time_t(info.st_mtime);
  return std::max(std::chrono::seconds(0), std::chrono::duration_cast<std::chrono::seconds>(now - modified));
}

// Directory entries whose names satisfy `keep`, sorted; unreadable directories give none.
template <typename Predicate>
std::vector<std::filesystem::path> files_named(const std::filesystem::path& dir, Predicate keep) {
  std::vector<std::filesystem::path> out;
  std::error_code error;
  for (std::filesystem::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    if (keep(it->path().filename().string())) {
      out.push_back(it->path());
    }
  }
  if (error) {
    logger().warn("cannot list cache directory {}: {}", dir.string(), error.message());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The full check of one entry file, shared by verify(); `expected` as in parse_cache_entry.
CacheVerifyResult check_entry(const std::filesystem::path& path) {
  CacheReadResult read = read_cache_file(path, ::geteuid());
  if (read.status != CacheReadStatus::ok) {
    return {path, false, read.message.empty() ? "vanished while checking" : read.message};
  }
  CacheEntryParse parsed = parse_cache_entry(as_byte_span(read.bytes), nullptr);
  if (!parsed.ok()) {
    return {path, false, parsed.message()};
  }
  if (parsed.key.file_name() != path.filename().string()) {
    return {path, false, fmt::format("name mismatch: the stored key belongs under {}", parsed.key.file_name())};
  }
  return {path, true, {}};
}

}  // namespace

DiskCache::DiskCache(std::filesystem::path dir, std::string disabled_reason)
    : dir_(std::move(dir)), disabled_reason_(std::move(disabled_reason)), counters_(std::make_unique<Counters>()) {}

DiskCache DiskCache::disabled(std::string reason) {
  if (reason.empty()) {
    reason = "disabled";
  }
  return DiskCache({}, std::move(reason));
}

DiskCache DiskCache::refuse(std::string reason) {
  warn_once(g_disabled_warned, fmt::format("disk cache disabled, kernels are cached in memory only: {}", reason));
  return disabled(std::move(reason));
}

DiskCache DiskCache::open() {
  CacheDirChoice choice = choose_cache_dir(process_environment());
  if (!choice.dir) {
    return refuse(choice.problem);
  }
  return open_at(*choice.dir);
}

DiskCache DiskCache::open_at(const std::filesystem::path& dir) {
  if (auto problem = env_path_problem("the cache directory", dir.native()); !problem.empty()) {
    return refuse(problem);
  }
  const TrustedFolder trusted = trusted_cache_folder(dir);
  if (!trusted.dir) {
    return refuse("refusing cache directory " + trusted.problem);
  }
  const std::filesystem::path clean = *trusted.dir;
  struct stat info {};
  if (::stat(clean.c_str(), &info) != 0) {
    return refuse(fmt::format("cannot stat cache directory {}: {}", clean.string(), errno_text(errno)));
  }
  const uid_t me = ::geteuid();
  ignore_file_size_signal();
  DiskCache cache(clean, {});
  if (::access(clean.c_str(), W_OK) != 0) {
    // A shared cache (root's, or this user's made read-only): read it, store nothing.
    cache.counters_->writes_stopped.store(true, std::memory_order_relaxed);
    warn_once(g_read_only_warned,
              fmt::format("cache directory {} (owned by uid {}) is not writable by this user (uid {}): kernels are "
                          "read from it, new ones will not be stored",
                          clean.string(), info.st_uid, me));
  }
  return cache;
}

bool DiskCache::writable() const { return enabled() && !counters_->writes_stopped.load(std::memory_order_relaxed); }

std::optional<CacheSections> DiskCache::miss() {
  counters_->misses.fetch_add(1, std::memory_order_relaxed);
  return std::nullopt;
}

std::optional<CacheSections> DiskCache::load(const EntryKey& key) {
  if (!enabled()) {
    return miss();
  }
  const std::filesystem::path path = dir_ / key.file_name();
  CacheReadResult read = read_cache_file(path, ::geteuid());
  switch (read.status) {
    case CacheReadStatus::ok:
      break;
    case CacheReadStatus::missing:
      return miss();
    case CacheReadStatus::refused:
      counters_->bad_entries.fetch_add(1, std::memory_order_relaxed);
      logger().warn("skipping untrusted cache entry: {}", read.message);
      return miss();
    case CacheReadStatus::too_large:
      counters_->bad_entries.fetch_add(1, std::memory_order_relaxed);
      logger().warn("removing cache entry: {}", read.message);
      remove_if_same_file(path, read.info);
      return miss();
    case CacheReadStatus::failed:
      logger().warn("cache entry unreadable: {}", read.message);
      return miss();
  }
  CacheEntryParse parsed = parse_cache_entry(as_byte_span(read.bytes), &key);
  if (!parsed.ok()) {
    counters_->bad_entries.fetch_add(1, std::memory_order_relaxed);
    const bool removed = remove_if_same_file(path, read.info);
    logger().warn("bad cache entry {} ({}); {}", path.string(), parsed.message(),
                  removed ? "removed, the kernel will be rebuilt" : "it changed meanwhile, left in place");
    return miss();
  }
  counters_->hits.fetch_add(1, std::memory_order_relaxed);
  return std::move(parsed.sections);
}

std::optional<CacheSections> DiskCache::load_from_any_compiler(const EntryKey& key) {
  if (!enabled()) {
    return miss();
  }
  EntryKey unversioned = key.stored();
  unversioned.nvrtc_version.clear();
  const std::string name = unversioned.file_name();
  const std::string prefix = name.substr(0, name.rfind(".nvrtc_.") + std::string_view(".nvrtc").size());
  auto candidates =
      files_named(dir_, [&](const std::string& file) { return file.starts_with(prefix) && is_cache_entry_name(file); });
  // Newest compiler first, by version number (not by name: "9-2" sorts after "13-0" as text); a
  // tie in version is broken by the rest of the name.
  std::stable_sort(candidates.begin(), candidates.end(), [&](const auto& a, const auto& b) {
    return compiler_rank(a.filename().string(), prefix.size()) < compiler_rank(b.filename().string(), prefix.size());
  });
  for (auto it = candidates.rbegin(); it != candidates.rend(); ++it) {
    CacheReadResult read = read_cache_file(*it, ::geteuid());
    if (read.status != CacheReadStatus::ok) {
      continue;
    }
    CacheEntryParse parsed = parse_cache_entry(as_byte_span(read.bytes), nullptr);
    if (!parsed.ok() || parsed.key.file_name() != it->filename().string()) {
      continue;  // a bad entry is load()'s to report and remove
    }
    EntryKey stored = parsed.key;
    stored.nvrtc_version.clear();
    if (stored == unversioned) {
      counters_->hits.fetch_add(1, std::memory_order_relaxed);
      return std::move(parsed.sections);
    }
  }
  return miss();
}

bool DiskCache::store(const EntryKey& key, const CacheSections& sections) {
  if (std::string problem = cache_sections_problem(key, sections); !problem.empty()) {
    throw ArgumentError(fmt::format("cannot cache kernel '{}': {}", key.kernel, problem));
  }
  if (!writable()) {
    return false;
  }
  CacheIoResult written = write_file_atomically(dir_, key.file_name(), encode_cache_entry(key, sections));
  if (!written.ok) {
    counters_->write_failures.fetch_add(1, std::memory_order_relaxed);
    counters_->writes_stopped.store(true, std::memory_order_relaxed);
    warn_once(g_write_failure_warned,
              fmt::format("disk cache write failed, new kernels are cached in memory only: {}", written.message));
    return false;
  }
  counters_->writes.fetch_add(1, std::memory_order_relaxed);
  return true;
}

std::vector<CacheEntryInfo> DiskCache::list() const {
  std::vector<CacheEntryInfo> out;
  if (!enabled()) {
    return out;
  }
  for (const auto& path : files_named(dir_, is_cache_entry_name)) {
    CacheReadResult read = read_cache_file(path, ::geteuid());
    if (read.status == CacheReadStatus::missing || read.status == CacheReadStatus::failed) {
      continue;
    }
    CacheEntryInfo info{path, static_cast<std::uintmax_t>(read.info.st_size), {}, {}, {}, age_of(read.info)};
    if (read.status == CacheReadStatus::ok) {
      CacheEntryParse parsed = parse_cache_entry(as_byte_span(read.bytes), nullptr);
      if (parsed.ok()) {
        info.kernel = parsed.key.kernel;
        info.params_tag = parsed.key.params_tag;
        info.arch = parsed.key.arch;
      }
    }
    out.push_back(std::move(info));
  }
  return out;
}

std::vector<CacheVerifyResult> DiskCache::verify() const {
  std::vector<CacheVerifyResult> out;
  if (!enabled()) {
    return out;
  }
  for (const auto& path : files_named(dir_, is_cache_entry_name)) {
    out.push_back(check_entry(path));
  }
  return out;
}

std::size_t DiskCache::clear() {
  if (!enabled()) {
    return 0;
  }
  std::size_t removed = 0;
  for (const auto& path : files_named(dir_, is_cache_entry_name)) {
    if (::unlink(path.c_str()) == 0) {
      ++removed;
    } else if (errno != ENOENT) {
      logger().warn("cannot remove cache entry {}: {}", path.string(), errno_text(errno));
    }
  }
  for (const auto& path : files_named(dir_, is_cache_temp_name)) {
    struct stat info {};
    if (::lstat(path.c_str(), &info) == 0 && age_of(info) > kStaleTempAge) {
      ::unlink(path.c_str());
    }
  }
  return removed;
}

CacheStats DiskCache::stats() const {
  return {counters_->hits.load(), counters_->misses.load(), counters_->bad_entries.load(), counters_->writes.load(),
          counters_->write_failures.load()};
}

}  // namespace metrale
