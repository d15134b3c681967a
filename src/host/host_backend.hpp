// host/host_backend.hpp: a GpuBackend that runs the kernel templates on the CPU. Kernels
// come from a HostKernelTable (the builtin variants, plus any added), a block's threads run as
// fibers, blocks on a few worker threads, and memory is tracked host memory.
// Invariants: load() hands out nonzero handles only for kernels in the table; launch() is
// synchronous and throws a BackendError naming the kernel, block and thread for anything a GPU
// would hide (divergent barrier, shuffle with absent lanes, deadlock), never hangs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "host/host_kernel_table.hpp"
#include "host/host_memory.hpp"
#include "metrale/gpu/gpu_backend.hpp"

namespace metrale {

namespace host {
class GridExecutor;
}

// Sanitizers inflate frames, so their builds get larger fiber stacks by default.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr std::size_t kDefaultFiberStackBytes = std::size_t{512} * 1024;
#else
inline constexpr std::size_t kDefaultFiberStackBytes = std::size_t{64} * 1024;
#endif

struct HostBackendOptions {
  std::uint32_t sm_count = 132;  // what the guards see; the host has no SMs
  ComputeCapability compute_capability{9, 0};
  unsigned worker_threads = 0;  // 0: std::thread::hardware_concurrency()
  std::size_t fiber_stack_bytes = kDefaultFiberStackBytes;
};

class HostBackend final : public GpuBackend {
 public:
  explicit HostBackend(HostBackendOptions options = {});
  ~HostBackend() override;

  // Makes one more kernel loadable (tests, host engines). Throws BackendError on a duplicate.
  void add_kernel(HostKernelInfo kernel);

  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] std::string device_key() const override { return "host"; }
  [[nodiscard]] bool needs_compiled_image() const override { return false; }
  [[nodiscard]] std::optional<std::uint32_t> sm_count() const override { return options_.sm_count; }
  [[nodiscard]] std::optional<ComputeCapability> compute_capability() const override {
    return options_.compute_capability;
  }

  KernelHandle load(const LoadRequest& request) override;
  void launch(KernelHandle kernel, const LaunchConfig& config, std::span<const KernelArg> args) override;

  DevicePtr alloc(std::size_t bytes) override { return memory_.alloc(bytes); }
  void free(DevicePtr ptr) override { memory_.free(ptr); }
  void copy_to_device(DevicePtr dst, const void* src, std::size_t bytes) override;
  void copy_to_host(void* dst, DevicePtr src, std::size_t bytes) override;
  void synchronize(std::uint64_t /*stream*/) override {}

  [[nodiscard]] const HostBackendOptions& options() const { return options_; }
  [[nodiscard]] std::size_t live_allocations() const { return memory_.live_allocations(); }

 private:
  HostBackendOptions options_;
  mutable std::mutex kernels_mutex_;
  HostKernelTable table_;
  std::vector<HostKernelInfo> loaded_;  // handle value - 1 -> the entry it was loaded from
  host::HostMemory memory_;
  std::unique_ptr<host::GridExecutor> executor_;
};

}  // namespace metrale
