// jit/compile_lock.cpp: the flock itself. flock has no timeout, so the wait is LOCK_NB tries
// a few milliseconds apart (growing to 50 ms): a compile takes hundreds of milliseconds at least,
// so the delay after a holder releases is small against what the wait saves.
#include "jit/compile_lock.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <thread>
#include <utility>

#include "ground/log.hpp"
#include "jit/cache_file_io.hpp"
#include "jit/compile_deadline.hpp"

namespace metrale {

std::string_view compile_lock_state_name(CompileLockState state) {
  switch (state) {
    case CompileLockState::kHeld:
      return "held";
    case CompileLockState::kTimedOut:
      return "timed out";
    case CompileLockState::kUnavailable:
      return "unavailable";
  }
  return "unavailable";
}

std::string compile_lock_file_name(std::string_view key_digest) {
  constexpr std::size_t kMaxDigestChars = 64;
  std::string name = ".lock-";
  for (const char c : key_digest) {
    if (std::isalnum(static_cast<unsigned char>(c)) != 0 && name.size() < kMaxDigestChars + 6) {
      name.push_back(c);
    }
  }
  return name;
}

CompileLock::CompileLock(CompileLock&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      state_(std::exchange(other.state_, CompileLockState::kUnavailable)),
      problem_(std::move(other.problem_)),
      waited_s_(other.waited_s_) {}

CompileLock& CompileLock::operator=(CompileLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) {
      ::close(fd_);
    }
    fd_ = std::exchange(other.fd_, -1);
    state_ = std::exchange(other.state_, CompileLockState::kUnavailable);
    problem_ = std::move(other.problem_);
    waited_s_ = other.waited_s_;
  }
  return *this;
}

CompileLock::~CompileLock() {
  if (fd_ >= 0) {
    ::close(fd_);  // releases the flock; the file stays (see the header)
  }
}

CompileLock CompileLock::acquire(const std::filesystem::path& dir, std::string_view key_digest, double wait_s) {
  CompileLock lock;
  const std::filesystem::path path = dir / compile_lock_file_name(key_digest);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    lock.problem_ = "cannot create " + path.string() + ": " + errno_text(errno);
    logger().debug("compile lock: {}; compiling without it", lock.problem_);
    return lock;
  }
  const auto start = std::chrono::steady_clock::now();
  auto pause = std::chrono::milliseconds(2);
  for (;;) {
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
      lock.fd_ = fd;
      lock.state_ = CompileLockState::kHeld;
      break;
    }
    const int error = errno;
    if (error == EINTR) {
      continue;
    }
    if (error != EWOULDBLOCK) {
      ::close(fd);
      lock.problem_ = "cannot lock " + path.string() + ": " + errno_text(error);
      logger().debug("compile lock: {}; compiling without it", lock.problem_);
      break;
    }
    const auto now = std::chrono::steady_clock::now();
    if (deadline_passed(start, now, wait_s)) {
      ::close(fd);
      lock.state_ = CompileLockState::kTimedOut;
      lock.problem_ = fmt::format("{} was held past the compile deadline ({:g} s)", path.string(), wait_s);
      logger().info("compile lock: {}; compiling without it", lock.problem_);
      break;
    }
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(pause, limit_duration(wait_s) - (now - start)));
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
  lock.waited_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return lock;
}

}  // namespace metrale
