// host/host_backend.cpp: the GpuBackend over the host kernel table, the grid executor and
// tracked host memory. A cluster launch is refused below compute capability 9.0 of the device
// the backend stands in for (HostBackendOptions::compute_capability), as CUDA would refuse it.
#include "host/host_backend.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <thread>
#include <utility>

#include "grid_executor.hpp"
#include "grid_sample.hpp"
#include "ground/log.hpp"
#include "host/builtin_kernels.hpp"
#include "host/builtin_source.hpp"
#include "host/launch_limits.hpp"
#include "jit/cache_location.hpp"
#include "jit/compile_deadline.hpp"
#include "launch_profiler.hpp"
#include "metrale/error.hpp"

namespace metrale {
namespace {

HostBackendOptions resolved(HostBackendOptions options) {
  if (options.worker_threads == 0) {
    options.worker_threads = std::max(1U, std::thread::hardware_concurrency());
  }
  if (options.fiber_stack_bytes < std::size_t{16} * 1024) {
    throw BackendError(
        fmt::format("host backend: fiber stack of {} bytes is too small (at least 16 KiB)", options.fiber_stack_bytes));
  }
  options.jit_compile_timeout_s =
      compile_timeout_s(options.jit_env, options.jit_compile_timeout_s, "HostBackendOptions::jit_compile_timeout_s");
  return options;
}

// Binds one launch's arguments to the kernel for every fiber.
struct BoundKernel {
  const HostKernelInfo* kernel;
  const KernelArg* args;

  static void run(const void* context) {
    const auto* self = static_cast<const BoundKernel*>(context);
    self->kernel->invoke(self->args);
  }
};

}  // namespace

HostBackend::HostBackend(HostBackendOptions options)
    : options_(resolved(options)),
      executor_(std::make_unique<host::GridExecutor>(options_.worker_threads, options_.fiber_stack_bytes)) {
  if (options_.profiled_kernels) {
    register_profiled_builtin_host_kernels(builtins_);
  } else {
    register_builtin_host_kernels(builtins_);
  }
}

void HostBackend::begin_profile(ProfileSampling sampling) { profile_ = sampling; }

std::vector<LaunchTraffic> HostBackend::end_profile() {
  profile_.reset();
  return std::exchange(profiled_, {});
}

HostBackend::~HostBackend() = default;

void HostBackend::add_kernel(HostKernelInfo kernel) {
  const std::lock_guard lock(kernels_mutex_);
  if (builtins_.find(kernel.kernel, kernel.params) != nullptr) {
    throw BackendError(
        fmt::format("host kernel '{}' with params {} is registered twice", kernel.kernel, kernel.params.tag()));
  }
  table_.add(std::move(kernel));
}

std::string HostBackend::describe() const {
  return fmt::format("host ({} worker thread{}, sm_count {})", options_.worker_threads,
                     options_.worker_threads == 1 ? "" : "s", options_.sm_count);
}

KernelHandle HostBackend::load(const LoadRequest& request) {
  const std::lock_guard lock(kernels_mutex_);
  // An engine's own instantiation (add_kernel) answers for its kernel; a built-in only for the
  // source it was compiled from; anything else given as source is compiled from that source.
  const HostKernelInfo* entry = table_.find(request.kernel, request.params);
  const std::optional<std::string> given = host::given_source_digest(request);
  if (entry == nullptr) {
    entry = builtins_.find(request.kernel, request.params);
    if (entry != nullptr && given && *given != host::embedded_source_digest(request.source)) {
      logger().info(
          "host backend: {} is given another {} than the one its built-in instantiation was compiled "
          "from (METRALE_TEMPLATE_DIR or an engine's override); the host JIT compiles the one given",
          entry->display_name, request.source);
      entry = nullptr;
    }
  }
  std::string compiled_from;  // the given source's digest, for an entry the host JIT compiled
  if (entry == nullptr && request.sources != nullptr && !request.source.empty()) {
    compiled_from = given.value_or("");
    entry = compile_at_run_time(request, compiled_from);
  }
  if (entry == nullptr) {
    throw BackendError(fmt::format("host backend has no kernel '{}' with params {} (it has: {}{}{})", request.kernel,
                                   request.params.tag(), builtins_.list(), table_.size() == 0 ? "" : ", ",
                                   table_.size() == 0 ? "" : table_.list()));
  }
  const auto known = std::find_if(loaded_.begin(), loaded_.end(), [&](const LoadedKernel& loaded) {
    return loaded.info.kernel == entry->kernel && loaded.info.params == entry->params &&
           loaded.compiled_from == compiled_from;
  });
  if (known != loaded_.end()) {
    return KernelHandle{static_cast<std::uint64_t>(known - loaded_.begin()) + 1};
  }
  loaded_.push_back(LoadedKernel{*entry, std::move(compiled_from)});
  return KernelHandle{loaded_.size()};
}

const HostKernelInfo* HostBackend::compile_at_run_time(const LoadRequest& request, const std::string& digest) {
  for (const LoadedKernel& compiled : jit_kernels_) {
    if (compiled.info.kernel == request.kernel && compiled.info.params == request.params &&
        compiled.compiled_from == digest) {
      return &compiled.info;
    }
  }
  if (!jit_) {
    std::optional<std::filesystem::path> dir = options_.jit_cache_dir;
    if (!dir) {
      if (const CacheDirChoice chosen = choose_cache_dir(options_.jit_env); chosen.dir) {
        dir = *chosen.dir / "host";
      }
    }
    jit_ = std::make_unique<host::HostJit>(std::move(dir), options_.jit_env, *options_.jit_compile_timeout_s);
  }
  host::HostJitResult built = jit_->build(
      {request.kernel, request.params, request.name_expression, request.source, request.sources,
       options_.profiled_kernels,
       static_cast<unsigned>(options_.compute_capability.major * 100 + options_.compute_capability.minor * 10)});
  if (!built.kernel) {
    throw BackendError(built.reason);
  }
  logger().debug("host JIT: {} {}", built.kernel->display_name,
                 built.from_cache ? "loaded from the cache" : "compiled");
  jit_kernels_.push_back(LoadedKernel{std::move(*built.kernel), digest});
  return &jit_kernels_.back().info;
}

host::HostJitStats HostBackend::jit_stats() const {
  const std::lock_guard lock(kernels_mutex_);
  return jit_ ? jit_->stats() : host::HostJitStats{};
}

HostBackend::ForkLocks HostBackend::lock_for_fork() {
  ForkLocks locks;
  locks.kernels = std::unique_lock(kernels_mutex_);
  locks.launch = executor_->lock_for_fork();
  locks.memory = memory_.lock_for_fork();
  return locks;
}

void HostBackend::launch(KernelHandle kernel, const LaunchConfig& config, std::span<const KernelArg> args) {
  HostKernelInfo entry;
  {
    const std::lock_guard lock(kernels_mutex_);
    if (!kernel.present() || kernel.value > loaded_.size()) {
      throw BackendError(fmt::format("host backend: launch of unknown kernel handle {}", kernel.value));
    }
    entry = loaded_[kernel.value - 1].info;
  }
  check_kernel_args(entry, args);
  if (auto problem = host::launch_config_problem(config, options_.compute_capability)) {
    throw BackendError(fmt::format("kernel {}: {}", entry.display_name, *problem));
  }
  if (config.dynamic_shared_bytes > options_.max_dynamic_shared_bytes) {
    throw BackendError(
        fmt::format("kernel {}: {} bytes of dynamic shared memory requested; this host backend stands in for a "
                    "device granting at most {} (HostBackendOptions::max_dynamic_shared_bytes)",
                    entry.display_name, config.dynamic_shared_bytes, options_.max_dynamic_shared_bytes));
  }
  logger().trace("host launch {} grid {} block {}", entry.display_name, to_string(config.grid),
                 to_string(config.block));
  const BoundKernel bound{&entry, args.data()};
  host::GridRun run{
      entry.display_name,          config.grid,          config.block, {&BoundKernel::run, &bound}, {}, nullptr,
      config.dynamic_shared_bytes, config.cluster_blocks};
  if (!profile_) {
    executor_->run(run);
    return;
  }
  const std::uint64_t budget = profile_->budget_blocks == 0 ? config.grid.volume() : profile_->budget_blocks;
  const host::GridSample sample =
      host::plan_grid_sample(config.grid, budget, profile_->wave_blocks, config.cluster_blocks);
  const std::vector<std::uint64_t> blocks = sample.blocks();
  const host::AddressRanges device(memory_.ranges());
  host::LaunchProfiler profiler(device, sample, config.block, executor_->slots(config.cluster_blocks));
  run.blocks = blocks;
  run.observer = &profiler;
  executor_->run(run);
  profiled_.push_back(profiler.finish(entry.display_name, config.grid));
  profiled_.back().dynamic_shared_bytes = config.dynamic_shared_bytes;
  profiled_.back().cluster_blocks = config.cluster_blocks;
}

void HostBackend::copy_to_device(DevicePtr dst, const void* src, std::size_t bytes) {
  if (bytes == 0) {
    return;
  }
  if (src == nullptr) {
    throw BackendError("host backend copy_to_device: null source");
  }
  std::memcpy(memory_.host_range(dst, bytes, "copy_to_device"), src, bytes);
}

void HostBackend::copy_to_host(void* dst, DevicePtr src, std::size_t bytes) {
  if (bytes == 0) {
    return;
  }
  if (dst == nullptr) {
    throw BackendError("host backend copy_to_host: null destination");
  }
  std::memcpy(dst, memory_.host_range(src, bytes, "copy_to_host"), bytes);
}

}  // namespace metrale
