// ops_bench.hpp: the pieces of metrale-ops-bench (tools/bench/ops_bench_*.cpp): the clock that
// times launches (CUDA events on a device, the wall clock on the host backend), the shapes,
// the per-kernel results and the report.
// Invariants: a kernel is timed only after its output, poisoned first, was checked against the
// reference (every element written, sampled rows bit-equal); a wrong kernel has no time; a kernel
// verification refused is never launched and its rows say why. Bytes
// are the fewest an op must move (each input read once, each output written once).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "metrale/gpu/device_handles.hpp"
#include "metrale/gpu/gpu_backend.hpp"

namespace metrale {
class Runtime;
struct RuntimeOptions;
}  // namespace metrale

namespace metrale::bench {

// Times launches on one backend. The CUDA clock records an event pair around each run on the
// default stream and puts a large copy ahead of each chunk of runs, so the host has queued the
// whole chunk before the device starts it (no launch gaps inside a pair). The host clock runs
// each launch to completion and reads the wall clock.
class BenchClock {
 public:
  virtual ~BenchClock() = default;
  // "cuda-events" or "wall-clock (CPU emulation, host backend)".
  [[nodiscard]] virtual std::string kind() const = 0;
  // Microseconds of each of `runs` calls of `launch(i)`.
  virtual std::vector<double> time_runs(int runs, const std::function<void(int)>& launch) = 0;
  // Microseconds per launch when `runs` calls of `launch(i, stream)` captured into one CUDA graph
  // are replayed: the kernels' time without the launch overhead the event times include.
  // nullopt where there are no graphs (the host backend).
  virtual std::optional<double> graph_us(int /*runs*/, const std::function<void(int, std::uint64_t)>& /*launch*/) {
    return std::nullopt;
  }
  // One device-to-device copy of `bytes` (the ceiling's primitive).
  virtual void copy(DevicePtr dst, DevicePtr src, std::size_t bytes) = 0;
};

// The clock for a CUDA runtime (throws BackendError when the driver lacks events); the clock for
// the host backend otherwise.
std::unique_ptr<BenchClock> make_cuda_clock(GpuBackend& gpu);
std::unique_ptr<BenchClock> make_host_clock(GpuBackend& gpu);

double median(std::vector<double> values);

// Allocations freed with their owner (the backend outlives every set).
class DeviceBuffers {
 public:
  explicit DeviceBuffers(GpuBackend& gpu) : gpu_(gpu) {}
  DeviceBuffers(const DeviceBuffers&) = delete;
  DeviceBuffers& operator=(const DeviceBuffers&) = delete;
  ~DeviceBuffers();
  DevicePtr alloc(std::size_t bytes);
  DevicePtr upload(const void* data, std::size_t bytes);

 private:
  GpuBackend& gpu_;
  std::vector<DevicePtr> owned_;
};

struct BenchSettings {
  bool host = false;                        // host backend, CPU emulation
  int repeats = 60;                         // timed runs per kernel (median)
  int warmup = 5;                           // untimed runs first
  std::size_t rotate_bytes = 256ull << 20;  // input sets rotate until they span this many bytes
  std::size_t ceiling_bytes = 1ull << 30;   // the copy ceiling's buffer
  std::vector<std::uint32_t> ms;            // token counts
  std::vector<std::uint32_t> fp8_ks;
  std::uint32_t ba_k = 5120, ba_n = 96, ba_nv = 48, ba_vpg = 3;
  bool sanity = false;  // check each kernel once at a small shape; no timing
  // The tensor-core kernel's K split at most this many CTAs (ops::launch_ba_gates_mma's cap):
  // a sweep measures a tile with and without its cluster.
  std::uint32_t mma_max_cluster = kMaxClusterBlocks;
  // Kernels verification refused in a child process (verify_in_child), by refusal_key: never
  // launched here, their rows printed as refused with this reason.
  std::map<std::string, std::string> refused;
};

// Every kernel's verification on this device in a child process forked before this one touches
// CUDA: a check that faults loses the child's context, not the bench's. `complete` only when the
// child wrote every verdict; `note` says what happened either way.
struct ChildVerdicts {
  std::map<std::string, std::string> refused;  // refusal_key(kernel, params tag) -> why
  bool complete = false;
  std::string note;
};
std::string refusal_key(std::string_view kernel, std::string_view params);
ChildVerdicts verify_in_child(const RuntimeOptions& options, std::chrono::seconds limit);

// The settings the issue asks for on a device, and the tiny ones of the host dry run.
BenchSettings device_settings();
BenchSettings host_settings();
BenchSettings sanity_settings(bool host);

struct KernelResult {
  std::string op;      // "ssm_ba_gates" | "fp8_act_quant"
  std::string kernel;  // "parent" | "twin" | "mma" | "mma_s<tiles>" (BA), "shared" | "twin" (FP8)
  std::uint32_t m = 0, k = 0, n = 0;
  std::uint64_t bytes = 0;  // the fewest bytes
  double flops = 0;         // arithmetic the op must do (FMA = 2)
  bool checked = false;     // the reference check passed
  std::string check_note;   // why it failed, or what was compared
  std::string refused;      // why verification refused it on this device (then it never ran)
  bool picked = false;      // the op's own pick at this shape with the lever on
  std::optional<double> median_us, min_us;
  std::optional<double> graph_us;           // per launch in a replayed CUDA graph (BenchClock::graph_us)
  std::optional<double> speedup_vs_parent;  // twin rows: parent time / twin time
  int input_sets = 0;
};

struct CeilingResult {
  std::uint64_t bytes = 0;  // read + written
  double median_us = 0;
  [[nodiscard]] double bytes_per_s() const { return median_us > 0 ? double(bytes) / (median_us * 1e-6) : 0; }
};

struct OpenTimes {
  std::optional<double> cold_ms, warm_ms, hot_ms;
  std::string note;
};

struct BenchReport {
  std::string mode;  // "cuda" | "host-emulation"
  std::string device;
  std::string clock;
  std::string sanity;        // "yes" in --sanity runs
  std::string verification;  // how the kernels were verified before the bench ran them
  std::optional<CeilingResult> ceiling;
  OpenTimes open;
  std::vector<KernelResult> kernels;
};

// Called with each kernel's result as soon as it is checked and timed, so a run that is killed
// later still printed and saved what it measured.
using ResultSink = std::function<void(KernelResult)>;

// Check then time every kernel of each op at every shape of `settings`, in the order given.
void run_ba_gates(Runtime& runtime, BenchClock* clock, const BenchSettings& settings, const ResultSink& sink);
void run_fp8_quant(Runtime& runtime, BenchClock* clock, const BenchSettings& settings, const ResultSink& sink);

// One op over a subset of the shapes. The goal shapes (BA at M = 8192, FP8 at M = 8192,
// K = 17408) come first, so a run cut short by its deadline still has the numbers judged.
struct BenchPass {
  std::string op;  // "ssm_ba_gates" | "fp8_act_quant"
  BenchSettings settings;
};
std::vector<BenchPass> goal_first_passes(const BenchSettings& settings);
CeilingResult measure_ceiling(GpuBackend& gpu, BenchClock& clock, const BenchSettings& settings);
// Runtime::open cold (fresh memory cache, empty cache dir), warm (disk), hot (memory).
OpenTimes time_runtime_open(bool host, int repeats);

// The table streams: the head (device, clock, ceiling, column names), one line per kernel as it
// is measured, then the open timings and the goals.
void print_head(const BenchReport& report);
void print_row(const BenchReport& report, const KernelResult& result);
void print_tail(const BenchReport& report);
// Writes the whole report so far (to a temporary file renamed over `path`: never half a file).
void write_json(const BenchReport& report, const std::string& path);
// Fills the ceiling fraction and the twin speedups from the medians.
void link_speedups(std::vector<KernelResult>& results);

}  // namespace metrale::bench
