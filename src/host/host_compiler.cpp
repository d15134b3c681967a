// host/host_compiler.cpp: finding the system compiler and running it through posix_spawn, its
// stdout and stderr read through one pipe (not a file: a full disk would lose the very message
// that says so).
#include "host/host_compiler.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <sstream>

extern char** environ;  // NOLINT(readability-redundant-declaration): posix_spawn's environment

namespace metrale::host {
namespace {

std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> words;
  std::istringstream in(text);
  for (std::string word; in >> word;) {
    words.push_back(word);
  }
  return words;
}

std::optional<std::string> on_path(const std::string& program, const EnvLookup& env) {
  if (program.find('/') != std::string::npos) {
    return ::access(program.c_str(), X_OK) == 0 ? std::optional<std::string>(program) : std::nullopt;
  }
  const std::string path = env("PATH").value_or("/usr/local/bin:/usr/bin:/bin");
  std::size_t from = 0;
  while (from <= path.size()) {
    const std::size_t end = std::min(path.find(':', from), path.size());
    const std::string dir = end > from ? path.substr(from, end - from) : std::string(".");
    const std::string candidate = dir + "/" + program;
    if (::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    from = end + 1;
  }
  return std::nullopt;
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

// The compiler's output kept for a reason: enough for any error log a person reads.
constexpr std::size_t kMaxKeptOutput = 1u << 20;

}  // namespace

CompilerSearch find_system_compiler(const EnvLookup& env) {
  std::vector<std::string> command;
  if (const auto cxx = env("CXX"); cxx && !cxx->empty()) {
    command = split_words(*cxx);
    const auto program = command.empty() ? std::nullopt : on_path(command.front(), env);
    if (!program) {
      return {std::nullopt, fmt::format("CXX={} is not an executable compiler", *cxx)};
    }
    command.front() = *program;
  } else {
    for (const char* name : {"c++", "g++", "clang++"}) {
      if (const auto program = on_path(name, env)) {
        command = {*program};
        break;
      }
    }
    if (command.empty()) {
      return {std::nullopt, "no C++ compiler: CXX is unset and none of c++, g++, clang++ is on PATH"};
    }
  }
  std::vector<std::string> version = command;
  version.emplace_back("--version");
  const CompilerRun ran = run_captured(version, std::filesystem::temp_directory_path());
  if (ran.exit_code != 0) {
    return {std::nullopt,
            fmt::format("{} --version failed (exit {}): {}", fmt::join(command, " "), ran.exit_code, ran.output)};
  }
  return {SystemCompiler{std::move(command), first_line(ran.output)}, {}};
}

CompilerRun run_captured(const std::vector<std::string>& argv, const std::filesystem::path& work_dir) {
  (void)work_dir;  // the child inherits this process's folder; every path it is given is absolute
  CompilerRun run;
  int ends[2] = {-1, -1};
  if (::pipe2(ends, O_CLOEXEC) != 0) {
    run.output = fmt::format("cannot start {}: pipe: {}", argv.front(), std::strerror(errno));
    return run;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, ends[1], STDOUT_FILENO);  // dup2 drops O_CLOEXEC
  posix_spawn_file_actions_adddup2(&actions, ends[1], STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& arg : argv) {
    args.push_back(const_cast<char*>(arg.c_str()));  // NOLINT(cppcoreguidelines-pro-type-const-cast): spawn's API
  }
  args.push_back(nullptr);
  pid_t child = 0;
  const int spawned = ::posix_spawnp(&child, args.front(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(ends[1]);
  if (spawned != 0) {
    ::close(ends[0]);
    run.output = fmt::format("cannot start {}: {}", argv.front(), std::strerror(spawned));
    return run;
  }
  // Read to the end (the child blocks on a full pipe otherwise), keeping the first part.
  std::array<char, 4096> buffer{};
  for (;;) {
    const ssize_t got = ::read(ends[0], buffer.data(), buffer.size());
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got <= 0) {
      break;
    }
    const std::size_t keep =
        std::min(static_cast<std::size_t>(got), kMaxKeptOutput - std::min(kMaxKeptOutput, run.output.size()));
    run.output.append(buffer.data(), keep);
  }
  ::close(ends[0]);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return run;
}

}  // namespace metrale::host
