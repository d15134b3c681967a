// kernel_verification.cpp: a kernel's checks on a thread of their own, within a time limit,
// folded into one verdict.
#include "runtime/kernel_verification.hpp"

#include <fmt/format.h>

#include <exception>
#include <memory>
#include <utility>

#include "ground/once_slots.hpp"

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
  auto promise = std::make_shared<std::promise<Outcome>>();
  std::future<Outcome> outcome = promise->get_future();
  const auto start = std::chrono::steady_clock::now();
  std::future<void> worker =
      std::async(std::launch::async, [&gpu, uses = std::vector<CheckUse>(uses.begin(), uses.end()), promise] {
        promise->set_value(run_checks(gpu, uses));
      });
  const std::string where = device_text(gpu);
  if (outcome.wait_for(limit) == std::future_status::timeout) {
    stragglers.push_back(std::move(worker));
    KernelVerdict verdict;
    verdict.verdict = ops::CheckVerdict::kFailed;
    verdict.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    verdict.worst = fmt::format("did not finish within its time limit of {} ms (cut off)", limit.count());
    verdict.refusal = refusal_text(where, verdict.worst);
    return verdict;
  }
  worker.get();
  Outcome done = outcome.get();
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
