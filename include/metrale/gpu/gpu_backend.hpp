// metrale/gpu/gpu_backend.hpp: what the registry and the ops need from a device.
// Two implementations: CudaBackend (the Driver API, loaded with dlopen) and HostBackend
// (the same kernel templates compiled for the CPU, a block's threads run as fibers).
// Invariants: a backend never hands out KernelHandle{0} for a loaded kernel; every
// failure is a BackendError naming the operation and the driver's reason.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "metrale/gpu/compute_capability.hpp"
#include "metrale/gpu/device_handles.hpp"
#include "metrale/gpu/kernel_params.hpp"
#include "metrale/gpu/launch_config.hpp"

namespace metrale {

// The SM count the guards assume when the device cannot say and no target gives one: the hopper
// target's (a wrong value moves only the guards' thresholds, never the results).
inline constexpr std::uint32_t kFallbackSmCount = 132;

enum class ImageKind { kCubin, kPtx };

// Everything a backend may need to turn one built kernel variant into a handle. The CUDA
// backend loads `image` and looks up `lowered_name`; the host backend ignores the image
// and finds its host-compiled instantiation by `kernel` and `params`.
struct LoadRequest {
  std::string_view kernel;           // "ssm_ba_gates_hopper"
  KernelParams params;               // {256, 64, 8}
  std::string_view name_expression;  // "metrale::kernels::ba_gates_twin<256, 64, 8>"
  std::string_view lowered_name;     // the mangled entry point; empty on the host backend
  std::span<const std::byte> image;  // CUBIN, or PTX text; empty on the host backend
  ImageKind image_kind = ImageKind::kCubin;
  // For a backend that compiles at run time (the host backend, for a variant it has no built-in
  // instantiation of): the source holding the template, and every source of the set by name.
  std::string_view source{};
  const std::map<std::string, std::string, std::less<>>* sources = nullptr;
};

// One kernel argument as the launch passes it: the address of the value and its size.
struct KernelArg {
  const void* value = nullptr;
  std::size_t size = 0;
};

// The most arguments one launch passes: the launch path holds them in fixed arrays, so an op call
// allocates nothing.
inline constexpr std::size_t kMaxKernelArgs = 32;
// Work kept off every other thread's streams and graph captures (verification): on a CUDA device
// a non-blocking stream of its own, never stream 0, with the calling thread's capture mode relaxed
// while it lives, so it cannot invalidate an engine's capture on another thread; on the host
// backend stream 0 and nothing to undo. Move-only; the destructor undoes what it set up.
class IsolatedWork {
 public:
  IsolatedWork() = default;
  IsolatedWork(std::uint64_t stream, std::function<void()> end) : stream_(stream), end_(std::move(end)) {}
  IsolatedWork(IsolatedWork&& other) noexcept : stream_(other.stream_), end_(std::move(other.end_)) {
    other.end_ = nullptr;
  }
  IsolatedWork& operator=(IsolatedWork&&) = delete;
  IsolatedWork(const IsolatedWork&) = delete;
  IsolatedWork& operator=(const IsolatedWork&) = delete;
  ~IsolatedWork() {
    if (end_) {
      end_();
    }
  }
  [[nodiscard]] std::uint64_t stream() const { return stream_; }

 private:
  std::uint64_t stream_ = 0;
  std::function<void()> end_;
};

class GpuBackend {
 public:
  GpuBackend() = default;
  GpuBackend(const GpuBackend&) = delete;
  GpuBackend& operator=(const GpuBackend&) = delete;
  GpuBackend(GpuBackend&&) = delete;
  GpuBackend& operator=(GpuBackend&&) = delete;
  virtual ~GpuBackend() = default;

  // "NVIDIA H200 (cc 9.0, 132 SMs)" or "host (2 worker threads)": for logs and the CLI.
  [[nodiscard]] virtual std::string describe() const = 0;
  // A stable identity for per-device handle caches ("cuda:0", "host").
  [[nodiscard]] virtual std::string device_key() const = 0;
  // What a verdict is keyed by and names (src/runtime/verdict_cache.hpp): the device's name
  // ("NVIDIA H200"), its UUID, and the driver's version ("580.159.04"). Defaults: describe() and
  // "unknown" (a backend that cannot say; its verdicts then share one key per name).
  [[nodiscard]] virtual std::string device_name() const { return describe(); }
  [[nodiscard]] virtual std::string device_uuid() const { return "unknown"; }
  [[nodiscard]] virtual std::string driver_version() const { return "unknown"; }
  // False for the host backend: the registry then skips NVRTC and loads host code.
  [[nodiscard]] virtual bool needs_compiled_image() const = 0;
  // nullopt when the query fails; callers fall back to the target's sm_count.
  [[nodiscard]] virtual std::optional<std::uint32_t> sm_count() const = 0;
  [[nodiscard]] virtual std::optional<ComputeCapability> compute_capability() const = 0;
  // The most dynamic shared memory one block may opt in to (227 KiB on sm_90 and sm_100, 99 KiB
  // on sm_89 and sm_12x); nullopt when unknown, and callers then assume the 48 KiB every device
  // grants without opting in.
  [[nodiscard]] virtual std::optional<std::uint32_t> max_dynamic_shared_bytes() const { return std::nullopt; }
  // How many clusters of config.cluster_blocks blocks of `kernel`, each with the config's block
  // and dynamic shared memory, the device can run at once (cuOccupancyMaxActiveClusters): 0
  // means a launch as configured cannot be scheduled at all. nullopt when unknown (the host
  // backend, which runs any cluster; a driver without the query): callers then assume it fits.
  // Not const: the CUDA backend first raises the kernel's dynamic shared memory limit.
  [[nodiscard]] virtual std::optional<std::uint32_t> max_active_clusters(KernelHandle /*kernel*/,
                                                                         const LaunchConfig& /*config*/) {
    return std::nullopt;
  }
  // Everything a first launch of `kernel` as configured does besides launching (the CUDA backend
  // raises the function's dynamic shared memory limit past 48 KiB), so a later launch, inside a
  // graph capture too, sets no attribute. Runtime::prepare calls it; a no-op where nothing is due.
  virtual void prepare_launch(KernelHandle /*kernel*/, const LaunchConfig& /*config*/) {}

  virtual KernelHandle load(const LoadRequest& request) = 0;
  virtual void launch(KernelHandle kernel, const LaunchConfig& config, std::span<const KernelArg> args) = 0;

  // Memory, for ops' callers and tests.
  virtual DevicePtr alloc(std::size_t bytes) = 0;
  virtual void free(DevicePtr ptr) = 0;
  virtual void copy_to_device(DevicePtr dst, const void* src, std::size_t bytes) = 0;
  virtual void copy_to_host(void* dst, DevicePtr src, std::size_t bytes) = 0;
  virtual void synchronize(std::uint64_t stream) = 0;
  // Whether `stream` is capturing into a CUDA graph (cuStreamGetCaptureInfo); false off a device.
  [[nodiscard]] virtual bool is_capturing(std::uint64_t /*stream*/) const { return false; }

  // Work isolated from other threads' streams and captures (see IsolatedWork); default: stream 0.
  virtual IsolatedWork isolate() { return {}; }
  // Copies ordered on `stream` that return once done (a CUDA device: async copy + stream sync, so
  // the legacy stream 0 is never touched). Default: the plain copies.
  virtual void copy_to_device_on(std::uint64_t /*stream*/, DevicePtr dst, const void* src, std::size_t bytes) {
    copy_to_device(dst, src, bytes);
  }
  virtual void copy_to_host_on(std::uint64_t /*stream*/, void* dst, DevicePtr src, std::size_t bytes) {
    copy_to_host(dst, src, bytes);
  }
  // After a failure: the text of a sticky error that lost the device's context ("the CUDA context
  // is lost: CUDA_ERROR_ILLEGAL_ADDRESS ..."), or nullopt when the device is still usable.
  [[nodiscard]] virtual std::optional<std::string> context_lost() { return std::nullopt; }
};

}  // namespace metrale
