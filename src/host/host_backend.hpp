// host/host_backend.hpp: a GpuBackend that runs the kernel templates on the CPU. Kernels
// come from a HostKernelTable (the builtin variants, plus any added), a block's threads run as
// fibers, blocks on a few worker threads, and memory is tracked host memory.
// Invariants: load() hands out nonzero handles only for kernels in the table; a built-in
// instantiation answers a load only when the source the load gives (with what it includes) is the
// embedded template it was compiled from (host/builtin_source.hpp), any other given source is
// compiled by the host JIT, so what an engine gives is what runs; launch() is
// synchronous and throws a BackendError naming the kernel, block and thread for anything a GPU
// would hide (divergent barrier, shuffle with absent lanes, deadlock), never hangs.
// Profiling: a backend opened with profiled_kernels loads the recording instantiations
// (builtin_kernels.hpp), and compiles a variant without one as a profiled host-JIT object
// (host_jit.hpp, the same flags); between begin_profile() and end_profile() each launch runs the sample
// of its grid the sampling names and leaves its LaunchTraffic (host/launch_traffic.hpp).
// A profile belongs to one caller: begin_profile, the launches and end_profile must not race
// with launches from other threads.
// Forking (a check in a child process, runtime/check_in_child.hpp): lock_for_fork holds every
// lock of the backend (its kernels, and with them the host JIT's; the executor's launch lock; its
// memory's), so a child forked while they are held, and that releases its copies, finds none of
// them taken by a thread that does not exist there.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "host/host_jit.hpp"
#include "host/host_kernel_table.hpp"
#include "host/host_memory.hpp"
#include "host/launch_traffic.hpp"
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
  // What the guards see as the device's dynamic shared memory limit; launches past it (or past
  // the 227 KiB any GPU grants) are refused.
  std::uint32_t max_dynamic_shared_bytes = kMaxOptInSharedBytes;
  unsigned worker_threads = 0;  // 0: std::thread::hardware_concurrency()
  std::size_t fiber_stack_bytes = kDefaultFiberStackBytes;
  // The kernels that record their accesses: the profiled built-ins, else profiled JIT objects.
  bool profiled_kernels = false;
  // Where the run-time compiler keeps the objects of variants without a built-in instantiation
  // (host/host_jit.hpp); nullopt: "host" in the disk cache's folder (METRALE_CACHE_DIR,
  // XDG_CACHE_HOME, ~/.cache/metrale), or a private temporary folder when there is none.
  std::optional<std::filesystem::path> jit_cache_dir;
  EnvLookup jit_env = process_environment();  // CXX, PATH, METRALE_INCLUDE_DIR, the cache folder
  // The most one host-JIT compile may take before its compiler is killed ("compile exceeded N s").
  // nullopt: METRALE_COMPILE_TIMEOUT_S through jit_env (default 300); not a positive number of
  // seconds: ConfigError from the constructor.
  std::optional<double> jit_compile_timeout_s;
};

// How much of a grid a profiled launch runs: the whole grid when budget_blocks is 0 or the grid
// fits, else a sample of about budget_blocks blocks in whole waves (src/host/grid_sample.hpp).
struct ProfileSampling {
  std::uint64_t budget_blocks = 0;
  std::uint64_t wave_blocks = 1;
};

class HostBackend final : public GpuBackend {
 public:
  explicit HostBackend(HostBackendOptions options = {});
  ~HostBackend() override;

  // Makes one more kernel loadable (tests, host engines). Throws BackendError on a duplicate.
  void add_kernel(HostKernelInfo kernel);

  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] std::string device_key() const override { return "host"; }
  // Fixed: the host backend runs the same code on every machine, so a verdict holds for all of them.
  [[nodiscard]] std::string device_name() const override { return "host backend"; }
  [[nodiscard]] std::string device_uuid() const override { return "host"; }
  [[nodiscard]] std::string driver_version() const override { return "none"; }
  [[nodiscard]] bool needs_compiled_image() const override { return false; }
  [[nodiscard]] std::optional<std::uint32_t> sm_count() const override { return options_.sm_count; }
  [[nodiscard]] std::optional<std::uint32_t> max_dynamic_shared_bytes() const override {
    return options_.max_dynamic_shared_bytes;
  }
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
  // The host backend has no graphs; a test says "this stream is capturing" with
  // simulate_capture(stream) (0 ends it), and is_capturing answers as the driver would, so the op
  // calls' capture path runs on the CPU. Launches still run at once.
  void simulate_capture(std::uint64_t stream) { capturing_stream_.store(stream, std::memory_order_relaxed); }
  [[nodiscard]] bool is_capturing(std::uint64_t stream) const override {
    return stream != 0 && capturing_stream_.load(std::memory_order_relaxed) == stream;
  }

  // Profiles the launches that follow (see the header comment); a second begin replaces the
  // sampling and keeps what was recorded.
  void begin_profile(ProfileSampling sampling);
  // The traffic of every launch since begin_profile, in launch order; ends the profile.
  std::vector<LaunchTraffic> end_profile();

  [[nodiscard]] const HostBackendOptions& options() const { return options_; }
  [[nodiscard]] std::size_t live_allocations() const { return memory_.live_allocations(); }
  // The run-time compiler's counts (all zero until a variant without a built-in instantiation
  // is loaded).
  [[nodiscard]] host::HostJitStats jit_stats() const;

  // Every lock of this backend, held until release() (in the parent and in a forked child, each
  // its own copy). Taken in one order: kernels, launch, memory; no other path nests them.
  struct ForkLocks {
    std::unique_lock<std::mutex> kernels;
    std::unique_lock<std::mutex> launch;
    std::unique_lock<std::mutex> memory;
    void release() {
      memory.unlock();
      launch.unlock();
      kernels.unlock();
    }
  };
  [[nodiscard]] ForkLocks lock_for_fork();

 private:
  // A kernel and, when the host JIT compiled it, the digest of the source it was compiled from
  // ("" for a built-in or an added kernel; source_set.hpp's source_digest otherwise).
  struct LoadedKernel {
    HostKernelInfo info;
    std::string compiled_from;
  };

  // The request's variant compiled from its source (the one whose digest is `digest`) by the
  // system compiler, once per (kernel, params, digest); called with kernels_mutex_ held.
  // BackendError with the reason (the compiler's log) when it cannot be.
  const HostKernelInfo* compile_at_run_time(const LoadRequest& request, const std::string& digest);

  HostBackendOptions options_;
  mutable std::mutex kernels_mutex_;
  HostKernelTable builtins_;  // the library's instantiations of its embedded templates
  HostKernelTable table_;     // the kernels add_kernel gave
  // What the host JIT compiled; a deque, so an entry stays where it is while others arrive.
  std::deque<LoadedKernel> jit_kernels_;
  std::vector<LoadedKernel> loaded_;    // handle value - 1 -> the entry it was loaded from
  std::unique_ptr<host::HostJit> jit_;  // made on the first variant the table lacks
  host::HostMemory memory_;
  std::unique_ptr<host::GridExecutor> executor_;
  std::optional<ProfileSampling> profile_;
  std::vector<LaunchTraffic> profiled_;
  std::atomic<std::uint64_t> capturing_stream_{0};
};

}  // namespace metrale
