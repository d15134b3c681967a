// runtime/prepared_gpu.hpp: the two backends an op's own code runs on around a graph capture,
// so prepare and the capture path reuse the op's pick, grids and launchers unchanged.
// - PrepareGpu (Runtime::prepare): the op call as it would run, except that a launch does what a
//   first launch does besides launching (GpuBackend::prepare_launch) and is recorded, and each
//   occupancy answer is asked of the device once and recorded; it never allocates or copies.
// - CaptureGpu (every op call on a capturing stream; one per runtime): forwards only what prepare recorded: a
//   launch of a prepared configuration, the occupancy answer prepare got; anything else (a load,
//   an allocation, a copy, an unprepared configuration or occupancy question) is a CaptureError
//   naming prepare, thrown before the device is touched.
// Invariants: PreparedLaunches is written under its mutex by prepare and read under it by a
// capture (a lock, never an allocation, on the call path); records are only added, never removed.
#pragma once

#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include "metrale/gpu/gpu_backend.hpp"
#include "ops/op_capture.hpp"

namespace metrale {

class PreparedLaunches {
 public:
  // Adds (or completes) the record of `record`'s configuration.
  void add(const ops::PreparedLaunch& record);
  // A copy of the record of that configuration, or nullopt.
  [[nodiscard]] std::optional<ops::PreparedLaunch> find(const ops::PreparedLaunch& key) const;
  [[nodiscard]] std::size_t size() const;

 private:
  mutable std::mutex mutex_;
  std::vector<ops::PreparedLaunch> records_;
};

// Forwards the device's questions to `device`; what the op asks beyond them is the subclasses'.
class ForwardingGpu : public GpuBackend {
 public:
  explicit ForwardingGpu(GpuBackend& device) : device_(device) {}
  [[nodiscard]] std::string describe() const override { return device_.describe(); }
  [[nodiscard]] std::string device_key() const override { return device_.device_key(); }
  [[nodiscard]] bool needs_compiled_image() const override { return device_.needs_compiled_image(); }
  [[nodiscard]] std::optional<std::uint32_t> sm_count() const override { return device_.sm_count(); }
  [[nodiscard]] std::optional<ComputeCapability> compute_capability() const override {
    return device_.compute_capability();
  }
  [[nodiscard]] std::optional<std::uint32_t> max_dynamic_shared_bytes() const override {
    return device_.max_dynamic_shared_bytes();
  }

 protected:
  GpuBackend& device_;
};

class PrepareGpu final : public ForwardingGpu {
 public:
  PrepareGpu(GpuBackend& device, PreparedLaunches& launches) : ForwardingGpu(device), launches_(launches) {}

  [[nodiscard]] std::optional<std::uint32_t> max_active_clusters(KernelHandle kernel,
                                                                 const LaunchConfig& config) override;
  KernelHandle load(const LoadRequest& request) override;
  void launch(KernelHandle kernel, const LaunchConfig& config, std::span<const KernelArg> args) override;
  DevicePtr alloc(std::size_t bytes) override;
  void free(DevicePtr ptr) override;
  void copy_to_device(DevicePtr dst, const void* src, std::size_t bytes) override;
  void copy_to_host(void* dst, DevicePtr src, std::size_t bytes) override;
  void synchronize(std::uint64_t stream) override;

  // The handles of the kernels the dry run prepared, in launch order.
  [[nodiscard]] const std::vector<KernelHandle>& launched() const { return launched_; }

 private:
  PreparedLaunches& launches_;
  std::vector<KernelHandle> launched_;
};

class CaptureGpu final : public ForwardingGpu {
 public:
  CaptureGpu(GpuBackend& device, const PreparedLaunches& launches) : ForwardingGpu(device), launches_(launches) {}

  [[nodiscard]] std::optional<std::uint32_t> max_active_clusters(KernelHandle kernel,
                                                                 const LaunchConfig& config) override;
  KernelHandle load(const LoadRequest& request) override;
  void launch(KernelHandle kernel, const LaunchConfig& config, std::span<const KernelArg> args) override;
  DevicePtr alloc(std::size_t bytes) override;
  void free(DevicePtr ptr) override;
  void copy_to_device(DevicePtr dst, const void* src, std::size_t bytes) override;
  void copy_to_host(void* dst, DevicePtr src, std::size_t bytes) override;
  void synchronize(std::uint64_t stream) override;
  [[nodiscard]] bool is_capturing(std::uint64_t stream) const override { return device_.is_capturing(stream); }
  // Launches this thread handed to a device through any CaptureGpu so far (one backend serves
  // every thread of a runtime, so the count is the thread's).
  [[nodiscard]] static std::size_t forwarded();

 private:
  [[noreturn]] void refuse(std::string_view what) const;

  const PreparedLaunches& launches_;
};

}  // namespace metrale

namespace metrale {

// What a runtime keeps for captures: the prepared handles of each op (by the runtime's op order)
// and the launch configurations prepare saw.
struct RuntimeCaptureState {
  mutable std::mutex mutex;  // guards `handles`
  std::vector<ops::PreparedHandles> handles;
  PreparedLaunches launches;
  std::unique_ptr<CaptureGpu> gpu;  // over the runtime's backend; null with no device
};

}  // namespace metrale
