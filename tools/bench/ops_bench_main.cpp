// ops_bench_main.cpp: metrale-ops-bench, the kernels' benchmark. On a CUDA device: the copy
// ceiling, then both kernels of each op at every shape (the goal shapes first), checked then
// timed with CUDA events, each row printed and the JSON rewritten as it is measured, then
// Runtime::open cold/warm/hot; --host runs the same code on the host backend at tiny shapes
// (CPU emulation, wall clock); --sanity checks each kernel once at small shapes (the
// compute-sanitizer target). Kernels are verified first (--verify: in a child process on a
// device, so a faulting check loses the child's context, not this one's); a refused kernel's rows
// say REFUSED with the reason. Not a test: BENCHMARKS.md records its numbers with the command.
// Exit status: 0 all good; 3 a kernel failed its check or was refused (the JSON is still written); 77 no CUDA
// device (and not --host); 1 any other error.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <exception>

#include "metrale/ops/fp8_act_quant.hpp"
#include "metrale/ops/ssm_ba_gates.hpp"
#include "metrale/runtime.hpp"
#include "ops_bench.hpp"

namespace {

using namespace metrale;

constexpr int kExitWrong = 3;
constexpr int kExitNoDevice = 77;

RuntimeOptions kernel_runtime_options(bool host) {
  RuntimeOptions options;
  options.backend = host ? BackendChoice::kHost : BackendChoice::kCuda;
  if (host) {
    options.registry.emplace();
    options.registry->store = {};  // nothing is compiled on the host backend
  }
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"metrale-ops-bench: the kernels against the copy ceiling, twin against parent"};
  bool host = false, sanity = false, no_open = false;
  std::string json_path;
  std::optional<int> repeats, warmup;
  std::vector<std::uint32_t> ms, fp8_ks;
  int open_repeats = 3;
  app.add_flag("--host", host, "run on the host backend (CPU emulation, tiny shapes, wall clock)");
  app.add_flag("--sanity", sanity, "check each kernel once at small shapes, no timing (for compute-sanitizer)");
  app.add_option("--json", json_path, "write the results as JSON to this file");
  app.add_option("--repeats", repeats, "timed runs per kernel (median; default 60, host 3)")
      ->check(CLI::Range(1, 10000));
  app.add_option("--warmup", warmup, "untimed runs first (default 5, host 1)")->check(CLI::Range(0, 1000));
  app.add_option("--m", ms, "token counts (default 1 16 264 1024 8192; host 1 4 16)")->check(CLI::Range(1u, 65536u));
  app.add_option("--fp8-k", fp8_ks, "FP8 row lengths, multiples of 128 (default 5120 6144 17408)")
      ->check(CLI::Range(128u, 1u << 20));
  app.add_option("--open-repeats", open_repeats, "Runtime::open runs per level (median)")->check(CLI::Range(1, 50));
  app.add_flag("--no-open", no_open, "skip the Runtime::open timings");
  std::optional<std::uint32_t> mma_max_cluster;
  app.add_option("--mma-max-cluster", mma_max_cluster,
                 "split the tensor-core kernel's K over at most this many CTAs (1, 2, 4 or 8; default 8)")
      ->check(CLI::IsMember({1u, 2u, 4u, 8u}));
  std::string verify_mode;
  app.add_option("--verify", verify_mode,
                 "how kernels are verified before the bench runs them: isolated (in a child process, so a check "
                 "that faults cannot lose the bench's CUDA context; the default on a device), inline (at the "
                 "runtime's open; the default with --host) or off (the bench's own checks only)")
      ->check(CLI::IsMember({"isolated", "inline", "off"}));
  int verify_limit_s = 240;
  app.add_option("--verify-limit", verify_limit_s, "seconds the isolated verification may take (then it is killed)")
      ->check(CLI::Range(1, 3600));
  CLI11_PARSE(app, argc, argv);
  if (verify_mode.empty()) {
    verify_mode = host ? "inline" : "isolated";
  }

  try {
    bench::BenchSettings settings =
        sanity ? bench::sanity_settings(host) : (host ? bench::host_settings() : bench::device_settings());
    settings.repeats = repeats.value_or(settings.repeats);
    settings.warmup = warmup.value_or(settings.warmup);
    settings.mma_max_cluster = mma_max_cluster.value_or(settings.mma_max_cluster);
    if (!ms.empty()) {
      settings.ms = ms;
    }
    if (!fp8_ks.empty()) {
      settings.fp8_ks = fp8_ks;
    }

    // First, before this process touches CUDA: the checks in a child, whose refusals this run
    // honours with verification off in its own open (nothing there can fault).
    RuntimeOptions options = kernel_runtime_options(host);
    std::string verification = "inline (at the runtime's open)";
    if (verify_mode == "isolated") {
      const bench::ChildVerdicts child = bench::verify_in_child(options, std::chrono::seconds(verify_limit_s));
      settings.refused = child.refused;
      verification = child.complete ? child.note : child.note + "; every kernel runs, checked by the bench alone";
      options.verify = false;
    } else if (verify_mode == "off") {
      options.verify = false;
      verification = "off (the bench's own checks only)";
    }
    auto runtime = Runtime::open(std::move(options));
    if (!runtime->has_device()) {
      fmt::print("metrale-ops-bench: no CUDA device ({}); --host runs the CPU emulation\n",
                 runtime->no_device_reason());
      return kExitNoDevice;
    }
    GpuBackend& gpu = *runtime->backend();
    bench::BenchReport report;
    report.mode = host ? "host-emulation" : "cuda";
    report.device = gpu.describe() + ", target " + runtime->target().name;
    report.sanity = sanity ? "yes" : "no";
    report.verification = verification;
    std::unique_ptr<bench::BenchClock> clock;
    if (!sanity) {
      clock = host ? bench::make_host_clock(gpu) : bench::make_cuda_clock(gpu);
      report.clock = clock->kind();
      report.ceiling = bench::measure_ceiling(gpu, *clock, settings);
    } else {
      report.clock = "none (--sanity: checks only)";
    }
    auto save = [&] {
      if (!json_path.empty()) {
        bench::write_json(report, json_path);
      }
    };
    bench::print_head(report);
    save();
    // Each row is printed and the JSON rewritten as soon as a kernel is measured: a run killed at
    // its deadline keeps every row it finished.
    const bench::ResultSink sink = [&](bench::KernelResult result) {
      report.kernels.push_back(std::move(result));
      bench::link_speedups(report.kernels);
      bench::print_row(report, report.kernels.back());
      save();
    };
    for (const bench::BenchPass& pass : bench::goal_first_passes(settings)) {
      if (pass.op == "ssm_ba_gates") {
        bench::run_ba_gates(*runtime, clock.get(), pass.settings, sink);
      } else {
        bench::run_fp8_quant(*runtime, clock.get(), pass.settings, sink);
      }
    }
    if (!sanity && !no_open) {
      report.open = bench::time_runtime_open(host, open_repeats);
    }
    bench::print_tail(report);
    save();
    const bool all_right = std::all_of(report.kernels.begin(), report.kernels.end(),
                                       [](const bench::KernelResult& r) { return r.checked; });
    if (report.kernels.empty()) {
      fmt::print(stderr, "metrale-ops-bench: the target built no kernel to run\n");
      return 1;
    }
    return all_right ? 0 : kExitWrong;
  } catch (const std::exception& error) {
    fmt::print(stderr, "metrale-ops-bench: {}\n", error.what());
    return 1;
  }
}
