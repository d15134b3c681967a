// check_in_child.cpp: fork, run, write the bytes to a pipe; the parent waits with a deadline,
// kills on expiry and names how the child ended.
#include "runtime/check_in_child.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <exception>
#include <mutex>

#include "ground/log.hpp"
#include "host/host_backend.hpp"

namespace metrale {

namespace {

// The child's side: never returns.
[[noreturn]] void child_main(int out, const std::function<std::string()>& work) {
  // A fault must not leave a core file per refused kernel; a parent that dies takes the child along.
  const rlimit no_core{0, 0};
  (void)setrlimit(RLIMIT_CORE, &no_core);
  (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
  logger().set_level(spdlog::level::off);  // an atomic store: no sink is ever entered
  // A fault ends the child by its signal, for the parent to name: not a handler the parent
  // installed (a test framework's, an interpreter's, a sanitizer's), which would report it as the
  // parent's own or carry on in a process that is only a copy.
  for (const int fault : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) {
    (void)std::signal(fault, SIG_DFL);
  }
  int status = 0;
  std::string bytes;
  try {
    bytes = work();
  } catch (...) {
    status = 3;  // `work` folds its own failures into its bytes; this is only a last resort
  }
  std::size_t done = 0;
  while (status == 0 && done < bytes.size()) {
    const ssize_t wrote = ::write(out, bytes.data() + done, bytes.size() - done);
    if (wrote < 0 && errno == EINTR) {
      continue;
    }
    if (wrote <= 0) {
      status = 4;
      break;
    }
    done += static_cast<std::size_t>(wrote);
  }
  ::close(out);
  ::_exit(status);
}

std::string signal_text(int signal) {
  const char* name = sigabbrev_np(signal);
  return fmt::format("signal {} (SIG{}: {})", signal, name == nullptr ? "?" : name, strsignal(signal));
}

// How the child ended, for a refusal.
std::string exit_text(int status) {
  if (WIFSIGNALED(status)) {
    const int signal = WTERMSIG(status);
    const bool fault = signal == SIGSEGV || signal == SIGBUS || signal == SIGILL || signal == SIGFPE;
    return fmt::format("the check's process was killed by {}{}", signal_text(signal),
                       fault ? ", a fault in the kernel or its check (an out-of-bounds access?)" : "");
  }
  return fmt::format("the check's process exited with status {}", WEXITSTATUS(status));
}

}  // namespace

ChildResult run_in_child(HostBackend& backend, const std::function<std::string()>& work,
                         std::chrono::milliseconds limit) {
  ChildResult result;
  int fds[2];
  pid_t child = -1;
  int saved = 0;
  {
    // One fork at a time, the pipe's write end closed here before the next: a child forked by
    // another thread must not inherit it, or this pipe's end would wait for that child too.
    static std::mutex forking;
    const std::lock_guard one_at_a_time(forking);
    if (::pipe2(fds, O_CLOEXEC) != 0) {
      result.problem = fmt::format("no pipe for the check's process: {}", std::strerror(errno));
      return result;
    }
    HostBackend::ForkLocks locks = backend.lock_for_fork();
    child = ::fork();
    if (child == 0) {
      locks.release();  // this process's copies, taken by the thread that forked: this one
      ::close(fds[0]);
      child_main(fds[1], work);
    }
    saved = errno;
    ::close(fds[1]);
  }
  if (child < 0) {
    ::close(fds[0]);
    result.problem = fmt::format("no process for the check: fork failed: {}", std::strerror(saved));
    return result;
  }
  const auto deadline = std::chrono::steady_clock::now() + limit;
  std::string bytes;
  bool ended = false;  // the pipe's end: the child closed it (or died)
  while (!ended) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      break;
    }
    pollfd watch{fds[0], POLLIN, 0};
    const int ready = ::poll(&watch, 1, static_cast<int>(std::min<std::int64_t>(left.count() + 1, 60000)));
    if (ready < 0 && errno != EINTR) {
      result.problem = fmt::format("waiting for the check's process failed: {}", std::strerror(errno));
      break;
    }
    if (ready <= 0) {
      continue;
    }
    char buffer[65536];
    const ssize_t got = ::read(fds[0], buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got <= 0) {
      ended = true;
      break;
    }
    bytes.append(buffer, static_cast<std::size_t>(got));
  }
  ::close(fds[0]);
  if (!ended) {
    ::kill(child, SIGKILL);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (result.timed_out) {
    result.problem = fmt::format("check exceeded {} ms (its process was killed)", limit.count());
    return result;
  }
  if (!result.problem.empty()) {
    return result;
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    result.bytes = std::move(bytes);
    return result;
  }
  result.problem = exit_text(status);
  return result;
}

}  // namespace metrale
