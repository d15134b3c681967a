// host/host_compiler.cpp: finding the system compiler and running it through posix_spawn, its
// stdout and stderr read through one pipe (not a file: a full disk would lose the very message
// that says so), in a process group of its own that is killed whole at the compile deadline.
#include "host/host_compiler.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
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

CompilerRun run_captured(const std::vector<std::string>& argv, const std::filesystem::path& work_dir, double limit_s) {
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
  // A process group of its own (pgid = its pid), set before it runs: at the deadline one kill
  // reaches the driver and every compiler pass it started.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& arg : argv) {
    args.push_back(const_cast<char*>(arg.c_str()));  // NOLINT(cppcoreguidelines-pro-type-const-cast): spawn's API
  }
  args.push_back(nullptr);
  pid_t child = 0;
  const auto start = std::chrono::steady_clock::now();
  const int spawned = ::posix_spawnp(&child, args.front(), &actions, &attributes, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  ::close(ends[1]);
  if (spawned != 0) {
    ::close(ends[0]);
    run.output = fmt::format("cannot start {}: {}", argv.front(), std::strerror(spawned));
    return run;
  }
  run.process_group = child;
  // Read to the end (the child blocks on a full pipe otherwise), keeping the first part, until the
  // deadline: then the group is killed and not read further (a process that left the group could
  // keep the pipe open for ever).
  std::array<char, 4096> buffer{};
  const auto deadline = start + limit_duration(limit_s);
  for (;;) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      run.timed_out = true;
      break;
    }
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
    pollfd readable{ends[0], POLLIN, 0};
    const int ready = ::poll(&readable, 1, static_cast<int>(std::min<long long>(left, 60'000)));
    if (ready < 0 && errno == EINTR) {
      continue;
    }
    if (ready == 0) {
      continue;  // the deadline is checked at the top
    }
    const ssize_t got = ready < 0 ? -1 : ::read(ends[0], buffer.data(), buffer.size());
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
  if (run.timed_out) {
    ::kill(-child, SIGKILL);
    ::kill(child, SIGKILL);  // in case the group could not be made
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (run.timed_out) {
    run.output = compile_exceeded_reason(limit_s) + (run.output.empty() ? "" : "; its output so far:\n" + run.output);
  }
  return run;
}

}  // namespace metrale::host
