// jit/compile_deadline.hpp: how long one compile may take (METRALE_COMPILE_TIMEOUT_S, or an option
// over it), the reason a compile past it is given, and running a compile on a worker thread that the
// caller waits for until a deadline and then abandons.
// Invariants:
// - The limit is a positive, finite number of seconds; anything else (0, -1, "abc", "inf", "1s") is
//   a ConfigError naming where it came from and the value. An empty or unset variable means the
//   default (kDefaultCompileTimeoutS).
// - A compile past its limit fails with exactly compile_exceeded_reason(limit) ("compile exceeded
//   1 s"), so a record, a log line and a test all say the same.
// - run_with_deadline's worker owns everything it touches (the callable and what it captured, and
//   the shared state its result goes to): the caller may return, and destroy its own inputs, while
//   an abandoned worker runs on. An abandoned worker's result is discarded when it finishes.
// - NVRTC cannot be interrupted: an abandoned NVRTC compile keeps its thread (and a core) until it
//   ends of itself. Some NVRTC versions serialise compiles within a process, so a later compile may
//   wait behind an abandoned one (BENCHMARKS.md, "Compile deadlines", measures it); the later one's
//   own deadline still holds, so nothing waits past its limit.
#pragma once

#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "metrale/environment.hpp"

namespace metrale {

inline constexpr double kDefaultCompileTimeoutS = 300.0;
inline constexpr const char* kCompileTimeoutVariable = "METRALE_COMPILE_TIMEOUT_S";

// The number of seconds `value` says, or nullopt when it is not a positive, finite number written
// as a whole (" 2", "2s", "0", "-1", "nan", "inf", "1e999" are refused). Pure.
std::optional<double> parse_compile_timeout(std::string_view value);

// The limit a compile runs under: `option` when given (RuntimeOptions::compile_timeout_s and the
// like; `option_name` names it in the error), else METRALE_COMPILE_TIMEOUT_S through `env`, else the
// default. ConfigError for a value that is not a positive number, naming the option or variable and
// the value. Pure given `env`.
double compile_timeout_s(const EnvLookup& env, std::optional<double> option = std::nullopt,
                         std::string_view option_name = "compile_timeout_s");

// "compile exceeded 1 s", "compile exceeded 0.5 s", "compile exceeded 300 s". Pure.
std::string compile_exceeded_reason(double limit_s);

// Whether a compile that started at `start` is past its limit at `now`. Pure.
bool deadline_passed(std::chrono::steady_clock::time_point start, std::chrono::steady_clock::time_point now,
                     double limit_s);

// The limit as a steady-clock duration (saturating: a limit past what the clock holds is "forever"). Pure.
std::chrono::steady_clock::duration limit_duration(double limit_s);

// A lookup that answers `names` as `env` answered them now, and nullopt for any other name: what a
// worker that may outlive its caller reads instead of the caller's lookup (which may capture state
// the caller owns). Pure given `env`.
EnvLookup snapshot_env(const EnvLookup& env, std::span<const char* const> names);

namespace detail {
// Counts the workers run_with_deadline started that have not finished, abandoned ones included.
void worker_started();
void worker_finished();
}  // namespace detail

// The workers of run_with_deadline still running (an abandoned NVRTC compile, until it ends).
std::size_t deadline_workers_running();
// Waits until none runs or `limit` passes; true when none runs. For tests and orderly shutdown: a
// process should not exit while an abandoned compile still runs inside a library being unloaded.
bool wait_for_deadline_workers(std::chrono::steady_clock::duration limit);

// Runs `work` on a detached thread and waits at most `limit_s` for its result: nullopt when the
// deadline passed first (the worker runs on; its result is discarded). `work` is moved into the
// worker, so it must own (capture by value) everything it reads. An exception `work` throws before
// the deadline is rethrown here; one after it is dropped with the result.
template <typename Result>
std::optional<Result> run_with_deadline(std::function<Result()> work, double limit_s) {
  struct State {
    std::mutex mutex;
    std::condition_variable done;
    bool finished = false;
    std::optional<Result> result;
    std::exception_ptr error;
  };
  auto state = std::make_shared<State>();
  detail::worker_started();
  try {
    std::thread([state, work = std::move(work)]() mutable {
      std::optional<Result> produced;
      std::exception_ptr error;
      try {
        produced.emplace(work());
      } catch (...) {
        error = std::current_exception();
      }
      {
        const std::lock_guard lock(state->mutex);
        state->result = std::move(produced);
        state->error = error;
        state->finished = true;
      }
      state->done.notify_all();
      detail::worker_finished();
    }).detach();
  } catch (...) {
    detail::worker_finished();  // no thread: nothing runs
    throw;
  }
  std::unique_lock lock(state->mutex);
  state->done.wait_until(lock, std::chrono::steady_clock::now() + limit_duration(limit_s),
                         [&] { return state->finished; });
  if (!state->finished) {
    return std::nullopt;
  }
  if (state->error) {
    std::rethrow_exception(state->error);
  }
  return std::move(state->result);
}

}  // namespace metrale
