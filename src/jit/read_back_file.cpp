// read_back_file.cpp: the type, link and size rules for files read back (jit/read_back_file.hpp).
#include "jit/read_back_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace metrale {
namespace {

std::string errno_message(int error) {
  char buffer[256];
  return ::strerror_r(error, buffer, sizeof buffer);  // GNU: returns the message
}

std::string_view kind_of(mode_t mode) {
  if (S_ISFIFO(mode)) {
    return "a FIFO";
  }
  if (S_ISCHR(mode)) {
    return "a character device";
  }
  if (S_ISBLK(mode)) {
    return "a block device";
  }
  if (S_ISSOCK(mode)) {
    return "a socket";
  }
  if (S_ISDIR(mode)) {
    return "a directory";
  }
  if (S_ISLNK(mode)) {
    return "a symbolic link";
  }
  return "not a regular file";
}

ReadBackFile refused(ReadBackRule rule, std::string message) {
  ReadBackFile out;
  out.rule = rule;
  out.message = std::move(message);
  return out;
}

// Where a link at `path` leads when it stays inside `folder` (both made canonical); nullopt
// when it leads out or cannot be resolved.
std::optional<std::filesystem::path> link_target_within(const std::filesystem::path& path,
                                                        const std::filesystem::path& folder) {
  std::error_code error;
  const std::filesystem::path target = std::filesystem::canonical(path, error);
  if (error) {
    return std::nullopt;
  }
  const std::filesystem::path root = std::filesystem::canonical(folder, error);
  if (error) {
    return std::nullopt;
  }
  const std::filesystem::path relative = target.lexically_relative(root);
  if (relative.empty() || *relative.begin() == "..") {
    return std::nullopt;
  }
  return target;
}

}  // namespace

OwnedFd& OwnedFd::operator=(OwnedFd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) {
      ::close(fd_);
    }
    fd_ = other.release();
  }
  return *this;
}

OwnedFd::~OwnedFd() {
  if (fd_ >= 0) {
    ::close(fd_);
  }
}

std::string_view read_back_rule_name(ReadBackRule rule) {
  switch (rule) {
    case ReadBackRule::none:
      return "read";
    case ReadBackRule::missing:
      return "missing";
    case ReadBackRule::not_regular:
      return "not a regular file";
    case ReadBackRule::link:
      return "a symbolic link";
    case ReadBackRule::too_large:
      return "past the size limit";
    case ReadBackRule::size_mismatch:
      return "not the recorded size";
    case ReadBackRule::io_error:
      return "unreadable";
  }
  return "unknown";
}

ReadBackFile open_read_back(const std::filesystem::path& path, const ReadBackRules& rules) {
  std::filesystem::path opened = path;
  int fd = ::open(opened.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0 && errno == ELOOP) {
    struct stat link {};
    ::lstat(path.c_str(), &link);
    const std::optional<std::filesystem::path> target =
        rules.links_within ? link_target_within(path, *rules.links_within) : std::nullopt;
    if (!target) {
      ReadBackFile out = refused(
          ReadBackRule::link,
          rules.links_within
              ? fmt::format("{} is a symbolic link that leads out of {} (or nowhere): refused", path.string(),
                            rules.links_within->string())
              : fmt::format("{} is a symbolic link: refused (read back files must be regular files)", path.string()));
      out.info = link;
      return out;
    }
    opened = *target;
    fd = ::open(opened.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  }
  if (fd < 0) {
    const int error = errno;
    ReadBackFile out = refused(error == ENOENT ? ReadBackRule::missing : ReadBackRule::io_error,
                               fmt::format("cannot open {}: {}", path.string(), errno_message(error)));
    out.error = error;
    return out;
  }
  ReadBackFile out;
  out.fd = OwnedFd(fd);
  if (::fstat(fd, &out.info) != 0) {
    out.error = errno;
    out.message = fmt::format("cannot stat {}: {}", path.string(), errno_message(out.error));
    out.fd = OwnedFd();
    return out;
  }
  auto refuse = [&](ReadBackRule rule, std::string message) {
    out.rule = rule;
    out.message = std::move(message);
    out.fd = OwnedFd();
    return std::move(out);
  };
  if (!S_ISREG(out.info.st_mode)) {
    return refuse(ReadBackRule::not_regular, fmt::format("{} is {}: refused (read back files must be regular files)",
                                                         path.string(), kind_of(out.info.st_mode)));
  }
  const auto size = static_cast<std::uint64_t>(out.info.st_size);
  if (size > rules.max_bytes) {
    return refuse(ReadBackRule::too_large,
                  fmt::format("{} is {} bytes, past the limit of {} bytes for such a file: refused", path.string(),
                              size, rules.max_bytes));
  }
  if (rules.expected_bytes && size != *rules.expected_bytes) {
    return refuse(ReadBackRule::size_mismatch, fmt::format("{} is {} bytes, the record of it says {}: refused",
                                                           path.string(), size, *rules.expected_bytes));
  }
  out.rule = ReadBackRule::none;
  return out;
}

void read_opened(ReadBackFile& file, const std::filesystem::path& path) {
  file.bytes.resize(static_cast<std::size_t>(file.info.st_size));
  std::size_t done = 0;
  while (done < file.bytes.size()) {
    const ssize_t got = ::read(file.fd.get(), file.bytes.data() + done, file.bytes.size() - done);
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got < 0) {
      file.error = errno;
      file.rule = ReadBackRule::io_error;
      file.message = fmt::format("cannot read {}: {}", path.string(), errno_message(file.error));
      file.bytes.clear();
      file.fd = OwnedFd();
      return;
    }
    if (got == 0) {
      break;  // it shrank under us: the parser reports it as truncated
    }
    done += static_cast<std::size_t>(got);
  }
  file.bytes.resize(done);
}

ReadBackFile read_back_file(const std::filesystem::path& path, const ReadBackRules& rules) {
  ReadBackFile file = open_read_back(path, rules);
  if (file.ok()) {
    read_opened(file, path);
    file.fd = OwnedFd();
  }
  return file;
}

}  // namespace metrale
