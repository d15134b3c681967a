// cli_process.hpp: running the metrale-jit binary from a test: one shell command, its exit
// code and its stdout+stderr, plus the small checks the CLI tests share.
// Invariant: a check that fails prints what it expected and what it got, and counts.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>

namespace metrale::cli_test {

struct Ran {
  int exit_code = -1;
  std::string output;  // stdout, then stderr when merged with 2>&1
};

inline Ran run_shell(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    throw std::runtime_error("cannot run " + command);
  }
  Ran ran;
  std::array<char, 4096> buffer{};
  std::size_t got = 0;
  while ((got = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) {
    ran.output.append(buffer.data(), got);
  }
  const int status = pclose(pipe);
  ran.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return ran;
}

// Single-quoted for sh (paths with spaces survive).
inline std::string quoted(const std::string& text) {
  std::string out = "'";
  for (const char c : text) {
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return out + "'";
}

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class Checks {
 public:
  void expect(bool ok, const std::string& what) {
    ++checks_;
    if (!ok) {
      ++failures_;
      std::fprintf(stderr, "FAILED: %s\n", what.c_str());
    }
  }
  // 0 when every check held.
  [[nodiscard]] int finish(const char* name) const {
    std::printf("%s: %d checks, %d failed\n", name, checks_, failures_);
    return failures_ == 0 && checks_ > 0 ? 0 : 1;
  }

 private:
  int checks_ = 0;
  int failures_ = 0;
};

}  // namespace metrale::cli_test
