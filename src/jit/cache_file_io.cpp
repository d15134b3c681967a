// cache_file_io.cpp: private directories, trusted reads and atomic writes for the disk cache.
#include "jit/cache_file_io.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>

#include "jit/cache_entry.hpp"
#include "jit/entry_key.hpp"
#include "jit/read_back_file.hpp"

namespace metrale {

namespace {

constexpr std::string_view kTempMarker = ".tmp.";

CacheIoResult failure(int error, std::string what) {
  return {false, error, fmt::format("{}: {}", what, errno_text(error))};
}

// Closes a descriptor on every path out of a function.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() {
    if (fd_ >= 0) {
      ::close(fd_);
    }
  }
  [[nodiscard]] int get() const { return fd_; }
  // Closes now and reports the close error (a deferred write error may surface here).
  int close_now() {
    int result = ::close(fd_);
    fd_ = -1;
    return result == 0 ? 0 : errno;
  }

 private:
  int fd_;
};

std::string unique_temp_name(const std::string& final_name) {
  static std::atomic<std::uint64_t> counter{0};
  const auto thread_hash = std::hash<std::thread::id>{}(std::this_thread::get_id());
  return fmt::format(".{}{}{}.{:x}.{}", final_name, kTempMarker, ::getpid(), thread_hash,
                     counter.fetch_add(1, std::memory_order_relaxed));
}

}  // namespace

std::string errno_text(int error) {
  char buffer[256];
  // GNU strerror_r returns the message (possibly a static string), not an int.
  return ::strerror_r(error, buffer, sizeof buffer);
}

CacheIoResult make_private_directories(const std::filesystem::path& dir) {
  std::filesystem::path partial;
  for (const auto& part : dir) {
    partial /= part;
    if (part == "/" || part.empty()) {
      continue;
    }
    if (::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST) {
      return failure(errno, fmt::format("cannot create cache directory {}", partial.string()));
    }
  }
  struct stat info {};
  if (::stat(dir.c_str(), &info) != 0) {
    return failure(errno, fmt::format("cannot stat cache directory {}", dir.string()));
  }
  if (!S_ISDIR(info.st_mode)) {
    return failure(ENOTDIR, fmt::format("cache path {}", dir.string()));
  }
  return {};
}

CacheReadResult read_cache_file(const std::filesystem::path& path, uid_t current_user) {
  CacheReadResult result;
  ReadBackFile file = open_read_back(path, ReadBackRules{kCacheMaxEntryBytes, std::nullopt, std::nullopt});
  result.info = file.info;
  result.message = file.message;
  switch (file.rule) {
    case ReadBackRule::none:
      break;
    case ReadBackRule::missing:
      result.status = CacheReadStatus::missing;
      result.message.clear();
      return result;
    case ReadBackRule::link:
    case ReadBackRule::not_regular:
      result.status = CacheReadStatus::refused;
      result.refusal = CachePathRefusal::not_a_regular_file;
      return result;
    case ReadBackRule::too_large:
    case ReadBackRule::size_mismatch:
      result.status = CacheReadStatus::too_large;
      return result;
    case ReadBackRule::io_error:
      return result;
  }
  result.refusal = cache_entry_refusal(result.info, current_user);
  if (result.refusal != CachePathRefusal::none) {
    result.status = CacheReadStatus::refused;
    result.message = describe_refusal(result.refusal, path, result.info, current_user);
    return result;
  }
  read_opened(file, path);
  if (!file.ok()) {
    result.message = file.message;
    return result;
  }
  result.bytes = std::move(file.bytes);
  result.status = CacheReadStatus::ok;
  return result;
}

namespace {
std::atomic<CacheWriteProbe> write_probe{nullptr};

void probe(CacheWriteStage stage) {
  if (const CacheWriteProbe current = write_probe.load(std::memory_order_acquire)) {
    current(stage);
  }
}
}  // namespace

void set_cache_write_probe(CacheWriteProbe next) { write_probe.store(next, std::memory_order_release); }

CacheIoResult write_file_atomically(const std::filesystem::path& dir, const std::string& name,
                                    const std::string& bytes) {
  const std::filesystem::path temp = dir / unique_temp_name(name);
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    return failure(errno, fmt::format("cannot create {}", temp.string()));
  }
  FileDescriptor file(fd);
  auto abandon = [&](int error, std::string what) {
    ::unlink(temp.c_str());
    return failure(error, std::move(what));
  };
  std::size_t done = 0;
  const std::size_t half = bytes.size() / 2;
  bool halfway = false;
  while (done < bytes.size()) {
    if (!halfway && done >= half) {
      halfway = true;
      probe(CacheWriteStage::kHalfWritten);
    }
    const std::size_t chunk = done < half ? half - done : bytes.size() - done;
    const ssize_t wrote = ::write(fd, bytes.data() + done, chunk);
    if (wrote < 0 && errno == EINTR) {
      continue;
    }
    if (wrote <= 0) {
      return abandon(wrote < 0 ? errno : EIO,
                     fmt::format("cannot write {} ({} of {} bytes written)", temp.string(), done, bytes.size()));
    }
    done += static_cast<std::size_t>(wrote);
  }
  if (::fsync(fd) != 0) {
    return abandon(errno, fmt::format("cannot fsync {}", temp.string()));
  }
  if (int error = file.close_now(); error != 0) {
    return abandon(error, fmt::format("cannot close {}", temp.string()));
  }
  const std::filesystem::path target = dir / name;
  probe(CacheWriteStage::kBeforeRename);
  if (::rename(temp.c_str(), target.c_str()) != 0) {
    return abandon(errno, fmt::format("cannot rename {} to {}", temp.string(), target.string()));
  }
  return {};
}

bool remove_if_same_file(const std::filesystem::path& path, const struct stat& info) {
  struct stat now {};
  if (::lstat(path.c_str(), &now) != 0 || now.st_dev != info.st_dev || now.st_ino != info.st_ino) {
    return false;
  }
  return ::unlink(path.c_str()) == 0;
}

bool is_cache_temp_name(std::string_view file_name) {
  return file_name.starts_with('.') && file_name.find(kTempMarker) != std::string_view::npos;
}

bool is_cache_entry_name(std::string_view file_name) {
  return !file_name.starts_with('.') && file_name.ends_with(kCacheEntrySuffix);
}

void ignore_file_size_signal() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction current {};
    if (::sigaction(SIGXFSZ, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
      struct sigaction ignore {};
      ignore.sa_handler = SIG_IGN;
      sigemptyset(&ignore.sa_mask);
      ::sigaction(SIGXFSZ, &ignore, nullptr);
    }
  });
}

}  // namespace metrale
