// jit/compile_deadline.cpp: the limit's parsing and reason, and the count of deadline workers
// (so a test, or a process about to exit, can wait for abandoned compiles to end).
#include "jit/compile_deadline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>

#include "metrale/error.hpp"

namespace metrale {
namespace {

// Past this a limit means "no limit": the clock's arithmetic must not overflow (about 31 years).
constexpr double kLongestLimitS = 1e9;

std::atomic<std::size_t>& workers() {
  static std::atomic<std::size_t> running{0};
  return running;
}

}  // namespace

std::optional<double> parse_compile_timeout(std::string_view value) {
  if (value.empty()) {
    return std::nullopt;
  }
  double seconds = 0.0;
  const char* end = value.data() + value.size();
  const auto [stop, error] = std::from_chars(value.data(), end, seconds);
  if (error != std::errc() || stop != end || !std::isfinite(seconds) || seconds <= 0.0) {
    return std::nullopt;
  }
  return seconds;
}

double compile_timeout_s(const EnvLookup& env, std::optional<double> option, std::string_view option_name) {
  if (option) {
    if (!std::isfinite(*option) || *option <= 0.0) {
      throw ConfigError(fmt::format("{} is {}: a compile needs a positive number of seconds (default {:g})",
                                    option_name, *option, kDefaultCompileTimeoutS));
    }
    return *option;
  }
  const std::optional<std::string> value = env ? env(kCompileTimeoutVariable) : std::nullopt;
  if (!value || value->empty()) {
    return kDefaultCompileTimeoutS;
  }
  if (const std::optional<double> seconds = parse_compile_timeout(*value)) {
    return *seconds;
  }
  throw ConfigError(fmt::format("{}='{}' is not a positive number of seconds (e.g. 300, 0.5; default {:g})",
                                kCompileTimeoutVariable, *value, kDefaultCompileTimeoutS));
}

std::string compile_exceeded_reason(double limit_s) { return fmt::format("compile exceeded {:g} s", limit_s); }

std::chrono::steady_clock::duration limit_duration(double limit_s) {
  const double seconds = std::isfinite(limit_s) ? std::clamp(limit_s, 0.0, kLongestLimitS) : kLongestLimitS;
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
}

bool deadline_passed(std::chrono::steady_clock::time_point start, std::chrono::steady_clock::time_point now,
                     double limit_s) {
  return now - start >= limit_duration(limit_s);
}

EnvLookup snapshot_env(const EnvLookup& env, std::span<const char* const> names) {
  auto values = std::make_shared<std::map<std::string, std::string, std::less<>>>();
  for (const char* name : names) {
    if (const std::optional<std::string> value = env ? env(name) : std::nullopt) {
      values->emplace(name, *value);
    }
  }
  return [values](const char* name) -> std::optional<std::string> {
    const auto found = values->find(std::string_view(name));
    return found == values->end() ? std::nullopt : std::optional<std::string>(found->second);
  };
}

namespace detail {
void worker_started() { ++workers(); }
void worker_finished() { --workers(); }
}  // namespace detail

std::size_t deadline_workers_running() { return workers().load(); }

bool wait_for_deadline_workers(std::chrono::steady_clock::duration limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (workers().load() != 0) {
    if (std::chrono::steady_clock::now() >= until) {
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

}  // namespace metrale
