// gpu/cuda_backend.hpp: GpuBackend on one CUDA device through the dlopen'ed driver.
// Invariants: every call makes the device's primary context current first, so one process
// may drive several devices from any thread; a module image is loaded once per device
// (deduplicated by its hash), and its functions stay valid until the backend is destroyed;
// every driver failure is a DriverError (gpu/cuda_error.hpp: a BackendError with the CUresult, its
// name and whether the context is now unusable) naming the call and cuGetErrorName. A launch without a
// cluster is cuLaunchKernel; a cluster launch (LaunchConfig::cluster_blocks > 1) is checked by
// cluster_launch_problem against the device's capability, then is cuLaunchKernelEx with a
// cluster-dimension attribute (a driver without that entry point refuses it by name). Module loads,
// function attribute calls and occupancy queries run with the thread's capture mode relaxed
// (gpu/cuda_relaxed_capture.hpp), so a load on a background thread never invalidates a capture
// another thread has in progress. A launch's shared memory is its function's static bytes plus
// the dynamic bytes asked: past 48 KiB together the function's limit is raised first, past the
// device's opt-in limit the launch is refused by name.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>

#include "gpu/cuda_context_scope.hpp"
#include "gpu/cuda_driver.hpp"
#include "metrale/gpu/gpu_backend.hpp"

namespace metrale {

class CudaBackend;

// The cuLaunchKernelEx description of `config`: its grid, block, dynamic shared memory and
// stream, with one attribute, `cluster` (filled here: CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
// {cluster_blocks, 1, 1}), which must outlive the result. Pure.
CUlaunchConfig cluster_launch_config(const LaunchConfig& config, CUlaunchAttribute& cluster);

// A backend, or the reason there is none ("no device" is a state, not an error).
struct CudaBackendOpen {
  std::unique_ptr<CudaBackend> backend;
  std::string reason;
};

class CudaBackend final : public GpuBackend {
 public:
  // Opens device `ordinal`; the reason says why not (no driver, no such device, ...).
  static CudaBackendOpen open(int ordinal);
  // The same over a given driver table with `device_count` devices (the process's driver, or a
  // unit test's fake); the table must outlive the backend.
  static CudaBackendOpen open_on(const CudaDriver& driver, int device_count, int ordinal);
  ~CudaBackend() override;

  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] std::string device_key() const override;
  [[nodiscard]] bool needs_compiled_image() const override { return true; }
  [[nodiscard]] std::optional<std::uint32_t> sm_count() const override { return sm_count_; }
  [[nodiscard]] std::optional<ComputeCapability> compute_capability() const override { return capability_; }
  [[nodiscard]] std::optional<std::uint32_t> max_dynamic_shared_bytes() const override { return max_shared_; }
  // cuOccupancyMaxActiveClusters for a cluster launch; nullopt for cluster_blocks 1, a driver
  // without the query, or a query the driver refuses (the launch then reports the real error).
  [[nodiscard]] std::optional<std::uint32_t> max_active_clusters(KernelHandle kernel,
                                                                 const LaunchConfig& config) override;

  KernelHandle load(const LoadRequest& request) override;
  void launch(KernelHandle kernel, const LaunchConfig& config, std::span<const KernelArg> args) override;

  DevicePtr alloc(std::size_t bytes) override;
  void free(DevicePtr ptr) override;
  void copy_to_device(DevicePtr dst, const void* src, std::size_t bytes) override;
  void copy_to_host(void* dst, DevicePtr src, std::size_t bytes) override;
  void synchronize(std::uint64_t stream) override;
  // cuStreamGetCaptureInfo (gpu/cuda_capture.hpp).
  [[nodiscard]] bool is_capturing(std::uint64_t stream) const override;
  // Raises the function's dynamic shared memory limit for the config, and asks a cluster
  // launch's occupancy, as the first launch would.
  void prepare_launch(KernelHandle kernel, const LaunchConfig& config) override;

  // Verification's identity and isolation (cuda_isolation.cpp).
  [[nodiscard]] std::string device_name() const override;
  [[nodiscard]] std::string device_uuid() const override;
  [[nodiscard]] std::string driver_version() const override;
  IsolatedWork isolate() override;
  void copy_to_device_on(std::uint64_t stream, DevicePtr dst, const void* src, std::size_t bytes) override;
  void copy_to_host_on(std::uint64_t stream, void* dst, DevicePtr src, std::size_t bytes) override;
  [[nodiscard]] std::optional<std::string> context_lost() override;

  [[nodiscard]] std::size_t loaded_module_count() const;

  // Our context, current until the returned scope ends; then the caller's again. Public for
  // callers that use the driver directly beside the backend (the bench's event clock).
  [[nodiscard]] CudaContextScope make_current() const;

 private:
  CudaBackend(const CudaDriver& driver, int ordinal, CUdevice device, CUcontext context);
  void check(CUresult result, const char* call) const;
  // Raises `function`'s dynamic shared memory limit to `dynamic_bytes` when its static bytes plus
  // those pass 48 KiB, once per size; BackendError when they pass the device's opt-in limit. A
  // per-thread cache of the last answer keeps the mutex off the repeat launch path.
  void opt_in_shared_memory(CUfunction function, std::uint32_t dynamic_bytes);
  // cluster_blocks > 1: checked, then cuLaunchKernelEx.
  void launch_cluster(CUfunction function, const LaunchConfig& config, void** args);

  // What a launch may use without cuFuncSetAttribute.

  const CudaDriver& driver_;
  int ordinal_;
  CUdevice device_;
  CUcontext context_;
  std::string name_;
  std::optional<std::uint32_t> sm_count_;
  std::optional<std::uint32_t> max_shared_;  // CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
  std::optional<ComputeCapability> capability_;
  std::uint64_t id_;  // unique per backend in the process: the launch path's cache key
  mutable std::mutex modules_mutex_;
  std::unordered_map<std::uint64_t, CUmodule> modules_;  // by image hash
  // Each launched function's static shared bytes and the dynamic bytes it may use now.
  struct SharedAllowance {
    std::uint32_t static_bytes = 0;
    std::uint32_t dynamic_bytes = 0;
  };
  std::unordered_map<CUfunction, SharedAllowance> shared_opt_in_;
  // max_active_clusters' answers: function, threads per block, dynamic shared bytes, cluster.
  std::map<std::tuple<CUfunction, std::uint64_t, std::uint32_t, std::uint32_t>, std::uint32_t> active_clusters_;
};

}  // namespace metrale
