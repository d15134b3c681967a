// prepared_gpu.cpp: the backends of prepare's dry run and of an op call inside a graph capture
// (runtime/prepared_gpu.hpp).
#include "runtime/prepared_gpu.hpp"

#include <fmt/format.h>

#include "metrale/error.hpp"

namespace metrale {

void PreparedLaunches::add(const ops::PreparedLaunch& record) {
  std::lock_guard lock(mutex_);
  for (ops::PreparedLaunch& known : records_) {
    if (ops::same_configuration(known, record)) {
      known.launched = known.launched || record.launched;
      if (record.active_clusters) {
        known.active_clusters = record.active_clusters;
      }
      return;
    }
  }
  records_.push_back(record);
}

std::optional<ops::PreparedLaunch> PreparedLaunches::find(const ops::PreparedLaunch& key) const {
  std::lock_guard lock(mutex_);
  const ops::PreparedLaunch* found = ops::find_prepared(records_, key);
  return found != nullptr ? std::optional<ops::PreparedLaunch>(*found) : std::nullopt;
}

std::size_t PreparedLaunches::size() const {
  std::lock_guard lock(mutex_);
  return records_.size();
}

namespace {

[[noreturn]] void dry_run_refuses(std::string_view what) {
  throw BackendError(fmt::format("prepare: an op asked to {} in its dry run (prepare never does)", what));
}

}  // namespace

std::optional<std::uint32_t> PrepareGpu::max_active_clusters(KernelHandle kernel, const LaunchConfig& config) {
  const std::optional<std::uint32_t> answer = device_.max_active_clusters(kernel, config);
  ops::PreparedLaunch record = ops::launch_key(kernel, config);
  record.active_clusters = answer;
  launches_.add(record);
  return answer;
}

KernelHandle PrepareGpu::load(const LoadRequest& /*request*/) { dry_run_refuses("load a kernel"); }

void PrepareGpu::launch(KernelHandle kernel, const LaunchConfig& config, std::span<const KernelArg> /*args*/) {
  if (!kernel.present()) {
    throw BackendError("prepare: a launch of an absent kernel");
  }
  device_.prepare_launch(kernel, config);
  ops::PreparedLaunch record = ops::launch_key(kernel, config);
  record.launched = true;
  launches_.add(record);
  launched_.push_back(kernel);
}

// The dry run's tensors are stand-in addresses: an op that allocates (a scratch it was not given)
// gets a stand-in too, freed as a no-op; nothing is ever read or written.
DevicePtr PrepareGpu::alloc(std::size_t /*bytes*/) { return DevicePtr{std::uint64_t{1} << 44}; }
void PrepareGpu::free(DevicePtr /*ptr*/) {}
void PrepareGpu::copy_to_device(DevicePtr /*dst*/, const void* /*src*/, std::size_t /*bytes*/) {
  dry_run_refuses("copy to the device");
}
void PrepareGpu::copy_to_host(void* /*dst*/, DevicePtr /*src*/, std::size_t /*bytes*/) {
  dry_run_refuses("copy to the host");
}
void PrepareGpu::synchronize(std::uint64_t /*stream*/) {}

namespace {
thread_local std::size_t forwarded_launches = 0;
}  // namespace

std::size_t CaptureGpu::forwarded() { return forwarded_launches; }

void CaptureGpu::refuse(std::string_view what) const {
  throw CaptureError(ops::capture_error_text("an op call", what));
}

std::optional<std::uint32_t> CaptureGpu::max_active_clusters(KernelHandle kernel, const LaunchConfig& config) {
  const std::optional<ops::PreparedLaunch> found = launches_.find(ops::launch_key(kernel, config));
  if (!found) {
    refuse(
        fmt::format("the occupancy of a cluster of {} blocks with {} bytes of dynamic shared memory is not "
                    "prepared",
                    config.cluster_blocks, config.dynamic_shared_bytes));
  }
  return found->active_clusters;
}

KernelHandle CaptureGpu::load(const LoadRequest& request) {
  refuse(fmt::format("it would load kernel {}", request.kernel));
}

void CaptureGpu::launch(KernelHandle kernel, const LaunchConfig& config, std::span<const KernelArg> args) {
  const std::optional<ops::PreparedLaunch> found = launches_.find(ops::launch_key(kernel, config));
  if (!found || !found->launched) {
    refuse(
        fmt::format("its launch ({} threads a block, {} bytes of dynamic shared memory, clusters of {}) is not "
                    "prepared",
                    config.block.volume(), config.dynamic_shared_bytes, config.cluster_blocks));
  }
  ++forwarded_launches;
  device_.launch(kernel, config, args);
}

DevicePtr CaptureGpu::alloc(std::size_t bytes) {
  refuse(fmt::format("it would allocate {} bytes (pass its scratch argument)", bytes));
}
void CaptureGpu::free(DevicePtr /*ptr*/) { refuse("it would free memory"); }
void CaptureGpu::copy_to_device(DevicePtr /*dst*/, const void* /*src*/, std::size_t /*bytes*/) {
  refuse("it would copy to the device");
}
void CaptureGpu::copy_to_host(void* /*dst*/, DevicePtr /*src*/, std::size_t /*bytes*/) {
  refuse("it would copy to the host");
}
void CaptureGpu::synchronize(std::uint64_t /*stream*/) { refuse("it would wait for the stream"); }

}  // namespace metrale
