// runtime/check_in_child.hpp: a host-backend check run in a child process (fork), so a check that
// never ends is killed at its time limit and one that faults (an out-of-bounds write: SIGSEGV,
// SIGBUS) ends only the child; the parent reads what the check produced from a pipe.
// Why a child rather than guard pages and a detached thread: a kernel that never ends holds the
// host executor (launches run one at a time) and its buffers, and a thread can be neither killed
// nor abandoned while it runs on the backend's memory (closing the runtime would free it under
// the thread); guard pages catch only writes that land next to a buffer and leave no safe way back
// from the signal. A child's loops and faults touch its own copy of the process only.
// Invariants: the fork happens with every lock of the host backend held (HostBackend::
// lock_for_fork), so the child finds them free; in the child the logger is silenced (its sinks'
// locks may be held by a thread that does not exist there), `work` runs, its bytes are written
// and the child _exit()s (no atexit handlers, no destructors of the parent's objects, no stdio
// flushed twice); the parent kills and reaps the child on every path, so none outlives the call.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>

namespace metrale {

class HostBackend;

struct ChildResult {
  std::optional<std::string> bytes;  // what `work` returned, when the child ended normally
  std::string problem;               // otherwise why not ("check exceeded 5000 ms", a signal, ...)
  bool timed_out = false;
};

// Runs `work` in a child process forked from this one, within `limit`. Never throws for what the
// child does; a fork or pipe the system refuses is a problem too.
ChildResult run_in_child(HostBackend& backend, const std::function<std::string()>& work,
                         std::chrono::milliseconds limit);

}  // namespace metrale
