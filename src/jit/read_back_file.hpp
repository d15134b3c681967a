// jit/read_back_file.hpp: reading back a file the library (or someone else) wrote earlier:
// a cache entry, a host-JIT object, a bundle's manifest or image. The one place the rules on
// what such a file may be are kept, so every reader applies the same ones.
// Invariants: the file is opened O_NOFOLLOW | O_NONBLOCK and judged on the opened file's
// fstat(), so the file checked is the file read and a FIFO, a device, a socket or a directory
// is refused without ever blocking on it or reading it; a symbolic link is refused, unless the
// caller names a folder the link may point into (a bundle installed through links), and then
// only when its target lies inside that folder; a file past the caller's size limit, or of
// another size than the caller expects (a manifest's recorded size), is refused before one byte
// is read; a refusal's message names the path and the rule. Never throws for I/O errors.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace metrale {

enum class ReadBackRule {
  none,           // read
  missing,        // no such file
  not_regular,    // a FIFO, device, socket or directory
  link,           // a symbolic link (where none is allowed, or pointing out of its folder)
  too_large,      // past the reader's limit
  size_mismatch,  // not the size the caller expects
  io_error,       // open, fstat or read failed (message has the errno text)
};

std::string_view read_back_rule_name(ReadBackRule rule);

struct ReadBackRules {
  std::uint64_t max_bytes = 0;                        // the reader's limit (a named constant, with its reason)
  std::optional<std::uint64_t> expected_bytes;        // the size recorded for it, when one is
  std::optional<std::filesystem::path> links_within;  // a folder a symbolic link may point into
};

// A descriptor closed with its owner.
class OwnedFd {
 public:
  OwnedFd() = default;
  explicit OwnedFd(int fd) : fd_(fd) {}
  OwnedFd(OwnedFd&& other) noexcept : fd_(other.release()) {}
  OwnedFd& operator=(OwnedFd&& other) noexcept;
  OwnedFd(const OwnedFd&) = delete;
  OwnedFd& operator=(const OwnedFd&) = delete;
  ~OwnedFd();
  [[nodiscard]] int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_ = -1;
};

struct ReadBackFile {
  ReadBackRule rule = ReadBackRule::io_error;
  std::string bytes;    // the whole file when rule == none
  struct stat info {};  // of the opened file (or of the link, for ReadBackRule::link)
  int error = 0;        // errno for io_error
  std::string message;  // "" when read; else names the path and the rule
  OwnedFd fd;           // open between open_read_back and the read; closed once read
  [[nodiscard]] bool ok() const { return rule == ReadBackRule::none; }
};

// Opens `path` by the rules above and checks type and size; reads nothing. On success the result
// has the descriptor and info, rule none.
ReadBackFile open_read_back(const std::filesystem::path& path, const ReadBackRules& rules);
// Reads the whole of a file open_read_back accepted (rule none); an error sets io_error.
void read_opened(ReadBackFile& file, const std::filesystem::path& path);
// open_read_back, then the whole file read (at most its fstat size: a file growing meanwhile is
// read to the size judged; one shrinking is returned short, for the parser to call truncated).
ReadBackFile read_back_file(const std::filesystem::path& path, const ReadBackRules& rules);

}  // namespace metrale
