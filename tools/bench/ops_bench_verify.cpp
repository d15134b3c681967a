// ops_bench_verify.cpp: every kernel's verification verdict on this device, taken in a child
// process (--verify isolated), so a check that faults loses the child's CUDA context, never the
// bench's: the bench then opens its own runtime with verification off and leaves the refused
// kernels out, printed as refused with the child's reason (ops_bench_cases.cpp).
// Invariants: the fork happens before this process touches CUDA (main calls this first); the child
// only opens a runtime, writes one line per verdict to a pipe and _exits; a child that dies,
// hangs past its limit or writes nothing leaves no refusal and a note that says why; the
// verdicts' text carries no tab or newline (both are replaced), so a line is one verdict.
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <sstream>

#include "metrale/runtime.hpp"
#include "ops_bench.hpp"

namespace metrale::bench {
namespace {

std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\t', ' ');
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

void write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t wrote = ::write(fd, text.data() + done, text.size() - done);
    if (wrote <= 0) {
      return;
    }
    done += static_cast<std::size_t>(wrote);
  }
}

// The child: open with verification on, one line per verdict ("kernel\tparams\trefusal"), exit 0;
// "error\t<what>" and exit 1 when the open itself fails.
[[noreturn]] void verify_child(int fd, RuntimeOptions options) {
  int status = 0;
  std::string out;
  try {
    options.verify = true;
    const auto runtime = Runtime::open(std::move(options));
    for (const KernelVerdict& verdict : runtime->verdicts()) {
      out += fmt::format("{}\t{}\t{}\n", one_line(verdict.kernel), one_line(verdict.params), one_line(verdict.refusal));
    }
    out += "done\n";
  } catch (const std::exception& error) {
    out = fmt::format("error\t{}\n", one_line(error.what()));
    status = 1;
  }
  write_all(fd, out);
  ::close(fd);
  std::fflush(nullptr);
  ::_exit(status);
}

}  // namespace

std::string refusal_key(std::string_view kernel, std::string_view params) {
  return fmt::format("{} {}", kernel, params);
}

ChildVerdicts verify_in_child(const RuntimeOptions& options, std::chrono::seconds limit) {
  ChildVerdicts result;
  int fds[2];
  if (::pipe(fds) != 0) {
    result.note = fmt::format("no child verification: pipe() failed: {}", std::strerror(errno));
    return result;
  }
  std::fflush(nullptr);
  const pid_t child = ::fork();
  if (child < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    result.note = fmt::format("no child verification: fork() failed: {}", std::strerror(errno));
    return result;
  }
  if (child == 0) {
    ::close(fds[0]);
    verify_child(fds[1], options);
  }
  ::close(fds[1]);
  std::string text;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  bool timed_out = false;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd wait{fds[0], POLLIN, 0};
    const int ready = ::poll(&wait, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (ready < 0 && errno != EINTR) {
      break;
    }
    if (ready <= 0) {
      continue;
    }
    char buffer[4096];
    const ssize_t got = ::read(fds[0], buffer, sizeof buffer);
    if (got <= 0) {
      break;  // the child closed its end: done, or dead
    }
    text.append(buffer, static_cast<std::size_t>(got));
  }
  ::close(fds[0]);
  if (timed_out) {
    ::kill(child, SIGKILL);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  std::istringstream lines(text);
  std::string line;
  bool done = false;
  std::size_t verdicts = 0;
  while (std::getline(lines, line)) {
    if (line == "done") {
      done = true;
      continue;
    }
    const std::size_t a = line.find('\t');
    const std::size_t b = a == std::string::npos ? a : line.find('\t', a + 1);
    if (line.rfind("error\t", 0) == 0) {
      result.note = "the verification child could not open a runtime: " + line.substr(6);
      continue;
    }
    if (b == std::string::npos) {
      continue;
    }
    ++verdicts;
    const std::string refusal = line.substr(b + 1);
    if (!refusal.empty()) {
      result.refused[refusal_key(line.substr(0, a), line.substr(a + 1, b - a - 1))] = refusal;
    }
  }
  if (timed_out) {
    result.note = fmt::format("the verification child did not finish within {} s (killed)", limit.count());
  } else if (WIFSIGNALED(status)) {
    result.note =
        fmt::format("the verification child died of signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  } else if (done) {
    result.complete = true;
    result.note = fmt::format("verified in a child process: {} verdicts, {} refused", verdicts, result.refused.size());
  } else if (result.note.empty()) {
    result.note = fmt::format("the verification child exited {} without its verdicts",
                              WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  return result;
}

}  // namespace metrale::bench
