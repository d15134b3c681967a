// kernel_verification.cpp: a kernel's checks within a time limit, folded into one verdict: on the
// host backend in a child process (check_in_child.hpp), elsewhere on a thread of their own.
#include "runtime/kernel_verification.hpp"

#include <fmt/format.h>

#include <cstring>
#include <exception>
#include <memory>
#include <utility>

#include "ground/once_slots.hpp"
#include "host/host_backend.hpp"
#include "runtime/check_in_child.hpp"

namespace metrale {

namespace {

// What the check thread hands back: its rows, or the fault that ended it.
struct Outcome {
  std::vector<ops::CheckResult> rows;
  std::string fault;
};

Outcome run_checks(GpuBackend& gpu, const std::vector<CheckUse>& uses) {
  Outcome out;
  try {
    // Isolated from every other thread's streams and captures for the whole check (the capture
    // mode is per thread, so it is set on the thread that launches).
    const IsolatedWork work = gpu.isolate();
    // The ops' once-per-process lines are the engine's calls', not these forced small runs'.
    const QuietSlots quiet;
    for (const CheckUse& use : uses) {
      if (!use.context.op->check) {
        continue;
      }
      ops::CheckOptions options;
      options.role = use.role;
      options.stream = work.stream();
      for (ops::CheckResult& row : use.context.op->check(use.context, options)) {
        out.rows.push_back(std::move(row));
      }
    }
  } catch (const std::exception& error) {
    out.fault = error.what();
  } catch (...) {
    out.fault = "a non-standard exception";
  }
  if (!out.fault.empty()) {
    try {
      if (const std::optional<std::string> lost = gpu.context_lost()) {
        out.fault += "; " + *lost;
      }
    } catch (const std::exception& error) {
      out.fault += fmt::format("; asking the device whether its context survived failed: {}", error.what());
    }
  }
  return out;
}

// An Outcome as the child process hands it to its parent: each text as its length (8 bytes) and
// its bytes, a verdict as one byte, a time as a double's bytes; both ends are this binary.
void put_text(std::string& out, std::string_view text) {
  const std::uint64_t size = text.size();
  out.append(reinterpret_cast<const char*>(&size), sizeof size);
  out.append(text);
}

std::string encode(const Outcome& outcome) {
  std::string out;
  put_text(out, outcome.fault);
  for (const ops::CheckResult& row : outcome.rows) {
    put_text(out, row.role);
    put_text(out, row.kernel);
    put_text(out, row.shape);
    put_text(out, row.check);
    out.push_back(static_cast<char>(row.verdict));
    put_text(out, row.worst);
    out.append(reinterpret_cast<const char*>(&row.ms), sizeof row.ms);
  }
  return out;
}

// The Outcome `encode` wrote; nullopt for bytes it could not have written (cut short).
std::optional<Outcome> decode(std::string_view in) {
  std::size_t at = 0;
  auto take = [&](void* to, std::size_t bytes) {
    if (in.size() - at < bytes) {
      return false;
    }
    std::memcpy(to, in.data() + at, bytes);
    at += bytes;
    return true;
  };
  auto text = [&](std::string& to) {
    std::uint64_t size = 0;
    if (!take(&size, sizeof size) || in.size() - at < size) {
      return false;
    }
    to.assign(in.substr(at, size));
    at += size;
    return true;
  };
  Outcome out;
  if (!text(out.fault)) {
    return std::nullopt;
  }
  while (at < in.size()) {
    ops::CheckResult row;
    char verdict = 0;
    if (!text(row.role) || !text(row.kernel) || !text(row.shape) || !text(row.check) || !take(&verdict, 1) ||
        !text(row.worst) || !take(&row.ms, sizeof row.ms)) {
      return std::nullopt;
    }
    row.verdict = static_cast<ops::CheckVerdict>(verdict);
    out.rows.push_back(std::move(row));
  }
  return out;
}

// The checks in a child process: one that never ends is killed at `limit`, one that faults ends
// only the child. nullopt past the limit; a fault or a child that died is the Outcome's fault.
std::optional<Outcome> run_checks_in_child(HostBackend& host, GpuBackend& gpu, const std::vector<CheckUse>& uses,
                                           std::chrono::milliseconds limit, std::string& timeout) {
  const ChildResult child = run_in_child(
      host, [&] { return encode(run_checks(gpu, uses)); }, limit);
  if (child.timed_out) {
    timeout = child.problem;
    return std::nullopt;
  }
  if (!child.bytes) {
    Outcome out;
    out.fault = child.problem;
    return out;
  }
  std::optional<Outcome> decoded = decode(*child.bytes);
  if (!decoded) {
    decoded.emplace();
    decoded->fault = fmt::format("the check's process wrote {} bytes that are no verdict", child.bytes->size());
  }
  return decoded;
}

KernelVerdict timed_out_verdict(std::string_view where, std::string worst,
                                std::chrono::steady_clock::time_point start) {
  KernelVerdict verdict;
  verdict.verdict = ops::CheckVerdict::kFailed;
  verdict.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  verdict.worst = std::move(worst);
  verdict.refusal = refusal_text(where, verdict.worst);
  return verdict;
}

}  // namespace

KernelVerdict verdict_from_rows(std::span<const ops::CheckResult> rows) {
  KernelVerdict verdict;
  std::vector<std::string> checks;
  bool ran = false;
  for (const ops::CheckResult& row : rows) {
    verdict.ms += row.ms;
    const std::string check = fmt::format("{} ({})", row.check, row.shape);
    checks.push_back(check);
    if (row.verdict == ops::CheckVerdict::kSkipped) {
      if (!ran) {
        verdict.worst = row.worst;
      }
      continue;
    }
    if (verdict.verdict == ops::CheckVerdict::kFailed) {
      continue;  // the first failure is the one reported
    }
    ran = true;
    verdict.verdict = row.verdict;
    verdict.worst = row.worst;
  }
  for (const std::string& check : checks) {
    verdict.check += (verdict.check.empty() ? "" : "; ") + check;
  }
  if (rows.empty()) {
    verdict.worst = "no op's check covers this kernel";
  }
  verdict.cacheable = ran;
  return verdict;
}

std::string device_text(const GpuBackend& gpu) {
  if (!gpu.needs_compiled_image()) {
    return gpu.describe();
  }
  return fmt::format("{}, driver {}", gpu.device_name(), gpu.driver_version());
}

std::string refusal_text(std::string_view where, std::string_view what) {
  return fmt::format("failed its check on {}: {}", where, what);
}

KernelVerdict verify_kernel(GpuBackend& gpu, std::span<const CheckUse> uses, std::chrono::milliseconds limit,
                            std::vector<Straggler>& stragglers) {
  const auto start = std::chrono::steady_clock::now();
  const std::string where = device_text(gpu);
  Outcome done;
  if (auto* host = dynamic_cast<HostBackend*>(&gpu)) {
    std::string timeout;
    std::optional<Outcome> outcome =
        run_checks_in_child(*host, gpu, std::vector<CheckUse>(uses.begin(), uses.end()), limit, timeout);
    if (!outcome) {
      return timed_out_verdict(where, std::move(timeout), start);
    }
    done = std::move(*outcome);
  } else {
    // A device context does not survive a fork: the checks run on a thread, and one past its limit
    // keeps running there (a sticky context error ends it on a GPU) while the caller waits for it.
    auto promise = std::make_shared<std::promise<Outcome>>();
    std::future<Outcome> outcome = promise->get_future();
    std::future<void> worker =
        std::async(std::launch::async, [&gpu, uses = std::vector<CheckUse>(uses.begin(), uses.end()), promise] {
          promise->set_value(run_checks(gpu, uses));
        });
    if (outcome.wait_for(limit) == std::future_status::timeout) {
      stragglers.push_back(std::move(worker));
      return timed_out_verdict(where, fmt::format("check exceeded {} ms (cut off)", limit.count()), start);
    }
    worker.get();
    done = outcome.get();
  }
  KernelVerdict verdict = verdict_from_rows(done.rows);
  // The whole verification's time (inputs, references, copies, launches), not only the launches.
  verdict.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!done.fault.empty()) {
    verdict.verdict = ops::CheckVerdict::kFailed;
    verdict.cacheable = false;
    verdict.worst = fmt::format("it faulted: {}", done.fault);
  }
  if (verdict.verdict == ops::CheckVerdict::kFailed) {
    verdict.refusal = refusal_text(where, verdict.worst);
  }
  return verdict;
}

}  // namespace metrale
