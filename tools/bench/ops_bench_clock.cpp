// ops_bench_clock.cpp: the benchmark's clocks. CUDA events, graphs and device copies come from
// gpu/cuda_graph_api (entry points of the driver the library already loaded, beside CudaDriver's),
// so the library's CudaDriver keeps only what the library needs.
// Invariants: every driver call is checked and a failure is a BackendError naming the call;
// the CUDA clock reads times only after the events of a chunk completed.
#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "gpu/cuda_backend.hpp"
#include "gpu/cuda_context_scope.hpp"
#include "gpu/cuda_graph_api.hpp"
#include "metrale/error.hpp"
#include "ops_bench.hpp"

namespace metrale::bench {
namespace {

// Runs per chunk: the spacer copy ahead of a chunk outlasts the host's queueing of it.
constexpr int kChunk = 20;
// The spacer: 2 x 256 MiB moved, ~0.12 ms at 4.3 TB/s, longer than queueing 20 launches.
constexpr std::size_t kSpacerBytes = 256ull << 20;

class CudaEventClock final : public BenchClock {
 public:
  explicit CudaEventClock(GpuBackend& gpu)
      : gpu_(gpu), current_(cuda_backend(gpu).make_current()), api_(CudaGraphApi::load()), spacer_(gpu) {
    spacer_src_ = spacer_.alloc(kSpacerBytes);
    spacer_dst_ = spacer_.alloc(kSpacerBytes);
    events_.resize(std::size_t{2} * kChunk);
    for (CUevent& event : events_) {
      check_cuda_call(api_.event_create(&event, CU_EVENT_DEFAULT), "cuEventCreate");
    }
  }
  CudaEventClock(const CudaEventClock&) = delete;
  CudaEventClock& operator=(const CudaEventClock&) = delete;
  ~CudaEventClock() override {
    for (CUevent event : events_) {
      api_.event_destroy(event);
    }
  }

  std::string kind() const override { return "cuda-events"; }

  std::vector<double> time_runs(int runs, const std::function<void(int)>& launch) override {
    std::vector<double> us;
    for (int done = 0; done < runs;) {
      const int chunk = std::min(kChunk, runs - done);
      copy(spacer_dst_, spacer_src_, kSpacerBytes);
      for (int i = 0; i < chunk; ++i) {
        check_cuda_call(api_.event_record(events_[2 * std::size_t(i)], nullptr), "cuEventRecord");
        launch(done + i);
        check_cuda_call(api_.event_record(events_[2 * std::size_t(i) + 1], nullptr), "cuEventRecord");
      }
      check_cuda_call(api_.event_synchronize(events_[2 * std::size_t(chunk) - 1]), "cuEventSynchronize");
      gpu_.synchronize(0);  // surfaces an asynchronous launch failure here
      for (int i = 0; i < chunk; ++i) {
        float ms = 0;
        check_cuda_call(api_.event_elapsed(&ms, events_[2 * std::size_t(i)], events_[2 * std::size_t(i) + 1]),
                        "cuEventElapsedTime");
        us.push_back(double(ms) * 1000.0);
      }
      done += chunk;
    }
    return us;
  }

  // Captures `runs` launches on a stream of its own into a graph, replays it once to warm up and
  // kGraphReplays times between two events: the time per launch without its launch overhead.
  std::optional<double> graph_us(int runs, const std::function<void(int, std::uint64_t)>& launch) override {
    constexpr int kGraphReplays = 3;
    CUstream stream = nullptr;
    check_cuda_call(api_.stream_create(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    CUgraph graph = nullptr;
    CUgraphExec exec = nullptr;
    const auto release = [&] {
      if (exec != nullptr) {
        api_.exec_destroy(exec);
      }
      if (graph != nullptr) {
        api_.graph_destroy(graph);
      }
      api_.stream_destroy(stream);
    };
    try {
      check_cuda_call(api_.begin_capture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "cuStreamBeginCapture");
      try {
        for (int i = 0; i < runs; ++i) {
          launch(i, reinterpret_cast<std::uint64_t>(stream));
        }
      } catch (...) {
        api_.end_capture(stream, &graph);  // ends the capture the failed launch left open
        throw;
      }
      check_cuda_call(api_.end_capture(stream, &graph), "cuStreamEndCapture");
      check_cuda_call(api_.instantiate(&exec, graph, 0), "cuGraphInstantiateWithFlags");
      check_cuda_call(api_.launch(exec, stream), "cuGraphLaunch");
      check_cuda_call(api_.event_record(events_[0], stream), "cuEventRecord");
      for (int r = 0; r < kGraphReplays; ++r) {
        check_cuda_call(api_.launch(exec, stream), "cuGraphLaunch");
      }
      check_cuda_call(api_.event_record(events_[1], stream), "cuEventRecord");
      check_cuda_call(api_.event_synchronize(events_[1]), "cuEventSynchronize");
      float ms = 0;
      check_cuda_call(api_.event_elapsed(&ms, events_[0], events_[1]), "cuEventElapsedTime");
      release();
      return double(ms) * 1000.0 / (double(kGraphReplays) * std::max(runs, 1));
    } catch (...) {
      release();
      throw;
    }
  }

  void copy(DevicePtr dst, DevicePtr src, std::size_t bytes) override {
    check_cuda_call(api_.copy_async(CUdeviceptr(dst.address), CUdeviceptr(src.address), bytes, nullptr),
                    "cuMemcpyDtoDAsync");
  }

 private:
  static CudaBackend& cuda_backend(GpuBackend& gpu) {
    auto* cuda = dynamic_cast<CudaBackend*>(&gpu);
    if (cuda == nullptr) {
      throw BackendError("the CUDA clock needs the CUDA backend, not " + gpu.describe());
    }
    return *cuda;
  }

  GpuBackend& gpu_;
  // The device's context stays current on this thread while the clock lives: the event calls
  // below go to the driver directly, not through the backend's own scopes.
  CudaContextScope current_;
  const CudaGraphApi& api_;
  DeviceBuffers spacer_;
  DevicePtr spacer_src_, spacer_dst_;
  std::vector<CUevent> events_;
};

class HostWallClock final : public BenchClock {
 public:
  explicit HostWallClock(GpuBackend& gpu) : gpu_(gpu), staging_(1) {}
  std::string kind() const override { return "wall-clock (CPU emulation, host backend)"; }

  std::vector<double> time_runs(int runs, const std::function<void(int)>& launch) override {
    std::vector<double> us;
    for (int i = 0; i < runs; ++i) {
      const auto start = std::chrono::steady_clock::now();
      launch(i);
      gpu_.synchronize(0);
      us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
    }
    return us;
  }

  // The host backend has no device-to-device copy: stage through host memory is two copies,
  // so a host copy into the destination from a host buffer stands in (same bytes moved).
  void copy(DevicePtr dst, DevicePtr, std::size_t bytes) override {
    if (staging_.size() < bytes) {
      staging_.assign(bytes, std::byte{0x5A});
    }
    gpu_.copy_to_device(dst, staging_.data(), bytes);
  }

 private:
  GpuBackend& gpu_;
  std::vector<std::byte> staging_;
};

}  // namespace

std::unique_ptr<BenchClock> make_cuda_clock(GpuBackend& gpu) { return std::make_unique<CudaEventClock>(gpu); }
std::unique_ptr<BenchClock> make_host_clock(GpuBackend& gpu) { return std::make_unique<HostWallClock>(gpu); }

double median(std::vector<double> values) {
  if (values.empty()) {
    return 0;
  }
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

DeviceBuffers::~DeviceBuffers() {
  for (DevicePtr ptr : owned_) {
    gpu_.free(ptr);
  }
}

DevicePtr DeviceBuffers::alloc(std::size_t bytes) {
  owned_.push_back(gpu_.alloc(bytes));
  return owned_.back();
}

DevicePtr DeviceBuffers::upload(const void* data, std::size_t bytes) {
  const DevicePtr ptr = alloc(bytes);
  gpu_.copy_to_device(ptr, data, bytes);
  return ptr;
}

CeilingResult measure_ceiling(GpuBackend& gpu, BenchClock& clock, const BenchSettings& settings) {
  DeviceBuffers buffers(gpu);
  const std::size_t bytes = settings.ceiling_bytes;
  const DevicePtr src = buffers.alloc(bytes);
  const DevicePtr dst = buffers.alloc(bytes);
  // A 16 MiB pattern (not zeros) tiled over the source: quick to make, nothing compressible.
  std::vector<std::byte> pattern(std::min<std::size_t>(bytes, 16ull << 20));
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    pattern[i] = std::byte(static_cast<unsigned char>((i * 2654435761u) >> 13));
  }
  for (std::size_t at = 0; at < bytes; at += pattern.size()) {
    gpu.copy_to_device(src.offset(at), pattern.data(), std::min(pattern.size(), bytes - at));
  }
  const int runs = std::max(5, settings.repeats / 3);
  clock.time_runs(std::min(settings.warmup, 2), [&](int) { clock.copy(dst, src, bytes); });
  const std::vector<double> us = clock.time_runs(runs, [&](int) { clock.copy(dst, src, bytes); });
  return CeilingResult{2 * std::uint64_t(bytes), median(us)};
}

}  // namespace metrale::bench
