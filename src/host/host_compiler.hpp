// host/host_compiler.hpp: the system C++ compiler the host backend's run-time compiler drives
// (CXX, else c++, g++ or clang++ on PATH), and running it with its output captured.
// Invariants: a missing compiler is a state (nullopt with the places looked in), never an
// exception; a run never goes through a shell, so paths need no quoting; a run never outlives its
// deadline, nor leaves a process of its group behind when it is cut.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "jit/compile_deadline.hpp"
#include "metrale/environment.hpp"

namespace metrale::host {

struct SystemCompiler {
  std::vector<std::string> command;  // the program and any arguments CXX carries ("ccache g++")
  std::string identity;              // the first line of `--version`: part of every cache key
};

struct CompilerSearch {
  std::optional<SystemCompiler> compiler;
  std::string problem;  // why there is none ("CXX=... is not executable", "no c++ ... on PATH")
};

// CXX (split on whitespace; its program looked up on PATH when it has no '/'), else the first
// of c++, g++, clang++ on PATH.
CompilerSearch find_system_compiler(const EnvLookup& env);

struct CompilerRun {
  int exit_code = -1;       // -1: it could not be started; 128 + the signal when one ended it
  std::string output;       // stdout and stderr together
  bool timed_out = false;   // killed at its deadline: exit_code is then 128 + SIGKILL
  pid_t process_group = 0;  // the child's pid, which leads its own process group (0: not started)
};

// Runs `argv` (argv[0] looked up on PATH when it has no '/'), its stdout and stderr captured through
// a pipe (the first MiB kept). `work_dir` is the compile's folder; the child needs no file in it.
// The child leads a process group of its own; past `limit_s` seconds the whole group is killed
// (SIGKILL: the driver and the cc1plus, as, ld it started) and the child reaped, timed_out set.
CompilerRun run_captured(const std::vector<std::string>& argv, const std::filesystem::path& work_dir,
                         double limit_s = kDefaultCompileTimeoutS);

}  // namespace metrale::host
