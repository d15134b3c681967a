// cuda_backend.cpp: module loading, launches and memory on one CUDA device.
#include "gpu/cuda_backend.hpp"

#define XXH_INLINE_ALL
#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "gpu/cluster_launch.hpp"
#include "gpu/cuda_capture.hpp"
#include "gpu/cuda_error.hpp"
#include "gpu/cuda_relaxed_capture.hpp"
#include "ground/log.hpp"
#include "metrale/error.hpp"

namespace metrale {
namespace {

// Each backend's identity for the launch path's per-thread cache (never reused, unlike an address).
std::atomic<std::uint64_t> next_backend_id{1};

// This thread's last answer to one per-backend question (the backend's id, the key, the value):
// a hit keeps the mutex and the map lookup off a repeat launch. Sound because the answers cached
// never change (a function's raised limit only grows; an occupancy answer is fixed per key) and
// a backend's id is never reused.
template <typename Key>
struct LastAnswer {
  std::uint64_t backend = 0;
  Key key{};
  std::uint32_t value = 0;

  [[nodiscard]] bool is(std::uint64_t id, const Key& asked) const { return backend == id && key == asked; }
};
// The function this thread last launched with dynamic shared memory and the dynamic bytes it may use.
thread_local LastAnswer<CUfunction> tls_opt_in;
// The cluster occupancy this thread last asked about.
using ClusterQuery = std::tuple<CUfunction, std::uint64_t, std::uint32_t, std::uint32_t>;
thread_local LastAnswer<ClusterQuery> tls_active_clusters;

}  // namespace

CudaBackendOpen CudaBackend::open(int ordinal) {
  const CudaDriverStatus& status = CudaDriver::load();
  if (!status.available()) {
    return {nullptr, status.reason};
  }
  return open_on(*status.driver, status.device_count, ordinal);
}

CudaBackendOpen CudaBackend::open_on(const CudaDriver& driver, int device_count, int ordinal) {
  if (ordinal < 0 || ordinal >= device_count) {
    return {nullptr, "CUDA device " + std::to_string(ordinal) + " does not exist (the driver reports " +
                         std::to_string(device_count) + " device(s))"};
  }
  CUdevice device = 0;
  if (const CUresult result = driver.device_get(&device, ordinal); result != CUDA_SUCCESS) {
    return {nullptr, "cuDeviceGet(" + std::to_string(ordinal) + ") failed: " + driver.describe(result)};
  }
  CUcontext context = nullptr;
  if (const CUresult result = driver.primary_ctx_retain(&context, device); result != CUDA_SUCCESS) {
    return {nullptr, "cuDevicePrimaryCtxRetain(" + std::to_string(ordinal) + ") failed: " + driver.describe(result)};
  }
  return {std::unique_ptr<CudaBackend>(new CudaBackend(driver, ordinal, device, context)), {}};
}

CudaBackend::CudaBackend(const CudaDriver& driver, int ordinal, CUdevice device, CUcontext context)
    : driver_(driver), ordinal_(ordinal), device_(device), context_(context), id_(next_backend_id.fetch_add(1)) {
  std::array<char, 256> name{};
  if (driver_.device_get_name(name.data(), static_cast<int>(name.size()), device_) == CUDA_SUCCESS) {
    name_ = name.data();
  }
  int major = 0;
  int minor = 0;
  int sms = 0;
  if (driver_.device_get_attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device_) == CUDA_SUCCESS &&
      driver_.device_get_attribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device_) == CUDA_SUCCESS) {
    capability_ = ComputeCapability{major, minor};
  }
  if (driver_.device_get_attribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device_) == CUDA_SUCCESS &&
      sms > 0) {
    sm_count_ = static_cast<std::uint32_t>(sms);
  }
  int shared = 0;
  if (driver_.device_get_attribute(&shared, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, device_) ==
          CUDA_SUCCESS &&
      shared > 0) {
    max_shared_ = static_cast<std::uint32_t>(shared);
  }
}

CudaBackend::~CudaBackend() {
  const CudaContextScope scope = make_current();
  for (const auto& [hash, module] : modules_) {
    driver_.module_unload(module);
  }
  driver_.primary_ctx_release(device_);
}

std::string CudaBackend::describe() const {
  return (name_.empty() ? std::string("CUDA device") : name_) + " (cc " +
         (capability_ ? capability_->str() : std::string("?")) + ", " +
         (sm_count_ ? std::to_string(*sm_count_) : std::string("?")) + " SMs)";
}

std::string CudaBackend::device_key() const { return "cuda:" + std::to_string(ordinal_); }

CudaContextScope CudaBackend::make_current() const { return CudaContextScope(driver_, context_); }

void CudaBackend::check(CUresult result, const char* call) const {
  if (result != CUDA_SUCCESS) {
    const char* name = nullptr;
    const bool named =
        driver_.get_error_name != nullptr && driver_.get_error_name(result, &name) == CUDA_SUCCESS && name != nullptr;
    const int code = static_cast<int>(result);
    const CudaErrorKind kind = cuda_error_kind(code);
    throw DriverError(std::string(call) + " failed on " + device_key() + ": " + driver_.describe(result) +
                          (kind == CudaErrorKind::kSticky ? " [sticky: the CUDA context is unusable from now on]" : ""),
                      code, named ? std::string(name) : "CUresult " + std::to_string(code));
  }
}

KernelHandle CudaBackend::load(const LoadRequest& request) {
  if (request.image.empty() || request.lowered_name.empty()) {
    throw BackendError("CudaBackend::load of '" + std::string(request.kernel) +
                       "' needs a compiled image and a lowered name");
  }
  const CudaContextScope scope = make_current();
  const std::uint64_t hash = XXH3_64bits(request.image.data(), request.image.size());
  CUmodule module = nullptr;
  {
    std::lock_guard lock(modules_mutex_);
    if (auto it = modules_.find(hash); it != modules_.end()) {
      module = it->second;
    } else {
      // PTX must be NUL-terminated for the driver; a CUBIN is passed as is.
      std::vector<char> image(request.image.size() + 1, '\0');
      std::memcpy(image.data(), request.image.data(), request.image.size());
      const RelaxedCaptureMode relaxed(driver_);  // loads run beside an engine's captures
      check(driver_.module_load_data(&module, image.data()), "cuModuleLoadData");
      modules_.emplace(hash, module);
    }
  }
  CUfunction function = nullptr;
  const std::string lowered(request.lowered_name);
  const RelaxedCaptureMode relaxed(driver_);
  check(driver_.module_get_function(&function, module, lowered.c_str()), "cuModuleGetFunction");
  return KernelHandle{reinterpret_cast<std::uint64_t>(function)};
}

void CudaBackend::launch(KernelHandle kernel, const LaunchConfig& config, std::span<const KernelArg> args) {
  if (!kernel.present()) {
    throw BackendError("cuLaunchKernel of an absent kernel on " + device_key());
  }
  // The argument pointers on the stack: a launch allocates nothing.
  std::array<void*, kMaxKernelArgs> values{};
  if (args.size() > values.size()) {
    throw BackendError(
        fmt::format("cuLaunchKernel with {} arguments on {}: at most {}", args.size(), device_key(), values.size()));
  }
  for (std::size_t i = 0; i < args.size(); ++i) {
    values[i] = const_cast<void*>(args[i].value);
  }
  const auto function = reinterpret_cast<CUfunction>(kernel.value);
  if (config.cluster_blocks != 1) {
    launch_cluster(function, config, values.data());
    return;
  }
  const CudaContextScope scope = make_current();
  opt_in_shared_memory(function, config.dynamic_shared_bytes);
  check(driver_.launch_kernel(function, config.grid.x, config.grid.y, config.grid.z, config.block.x, config.block.y,
                              config.block.z, config.dynamic_shared_bytes, reinterpret_cast<CUstream>(config.stream),
                              values.data(), nullptr),
        "cuLaunchKernel");
}

CUlaunchConfig cluster_launch_config(const LaunchConfig& config, CUlaunchAttribute& cluster) {
  cluster = CUlaunchAttribute{};
  cluster.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  cluster.value.clusterDim.x = config.cluster_blocks;
  cluster.value.clusterDim.y = 1;
  cluster.value.clusterDim.z = 1;
  CUlaunchConfig out{};
  out.gridDimX = config.grid.x;
  out.gridDimY = config.grid.y;
  out.gridDimZ = config.grid.z;
  out.blockDimX = config.block.x;
  out.blockDimY = config.block.y;
  out.blockDimZ = config.block.z;
  out.sharedMemBytes = config.dynamic_shared_bytes;
  out.hStream = reinterpret_cast<CUstream>(config.stream);
  out.attrs = &cluster;
  out.numAttrs = 1;
  return out;
}

void CudaBackend::launch_cluster(CUfunction function, const LaunchConfig& config, void** args) {
  if (auto problem = cluster_launch_problem(config, capability_.value_or(ComputeCapability{}))) {
    throw BackendError(fmt::format("cluster launch on {}: {}", device_key(), *problem));
  }
  if (driver_.launch_kernel_ex == nullptr) {
    throw BackendError(
        fmt::format("cluster launch on {}: the CUDA driver lacks cuLaunchKernelEx (ABI version 11060)", device_key()));
  }
  const CudaContextScope scope = make_current();
  opt_in_shared_memory(function, config.dynamic_shared_bytes);
  CUlaunchAttribute cluster{};
  const CUlaunchConfig launch = cluster_launch_config(config, cluster);
  check(driver_.launch_kernel_ex(&launch, function, args, nullptr), "cuLaunchKernelEx(CLUSTER_DIMENSION)");
}

std::optional<std::uint32_t> CudaBackend::max_active_clusters(KernelHandle kernel, const LaunchConfig& config) {
  if (!kernel.present() || config.cluster_blocks <= 1 || driver_.occupancy_max_active_clusters == nullptr ||
      cluster_launch_problem(config, capability_.value_or(ComputeCapability{}))) {
    return std::nullopt;
  }
  const auto function = reinterpret_cast<CUfunction>(kernel.value);
  // The answer depends on the function, the block, the shared memory and the cluster, not on
  // the grid: asked of the driver once per combination, since a launcher asks before each launch.
  const ClusterQuery key{function, config.block.volume(), config.dynamic_shared_bytes, config.cluster_blocks};
  if (tls_active_clusters.is(id_, key)) {
    return tls_active_clusters.value;
  }
  {
    std::lock_guard lock(modules_mutex_);
    if (const auto found = active_clusters_.find(key); found != active_clusters_.end()) {
      tls_active_clusters = LastAnswer<ClusterQuery>{id_, key, found->second};
      return found->second;
    }
  }
  const CudaContextScope scope = make_current();
  // The query counts the launch's dynamic shared memory only once the function may use it.
  opt_in_shared_memory(function, config.dynamic_shared_bytes);
  CUlaunchAttribute cluster{};
  const CUlaunchConfig launch = cluster_launch_config(config, cluster);
  int clusters = 0;
  {
    const RelaxedCaptureMode relaxed(driver_);
    if (driver_.occupancy_max_active_clusters(&clusters, function, &launch) != CUDA_SUCCESS || clusters < 0) {
      return std::nullopt;
    }
  }
  std::lock_guard lock(modules_mutex_);
  active_clusters_[key] = static_cast<std::uint32_t>(clusters);
  tls_active_clusters = LastAnswer<ClusterQuery>{id_, key, static_cast<std::uint32_t>(clusters)};
  return static_cast<std::uint32_t>(clusters);
}

void CudaBackend::opt_in_shared_memory(CUfunction function, std::uint32_t dynamic_bytes) {
  // A block may use 48 KiB of shared memory, static and dynamic together, without asking; past
  // that the launch fails unless the function's dynamic limit was raised first, and static plus
  // dynamic may never pass the device's opt-in limit. Raised once per function to the largest asked.
  if (dynamic_bytes == 0) {
    return;  // static bytes alone fit: the compiler refuses more than 48 KiB of them
  }
  if (tls_opt_in.is(id_, function) && tls_opt_in.value >= dynamic_bytes) {
    return;
  }
  std::lock_guard lock(modules_mutex_);
  auto found = shared_opt_in_.find(function);
  if (found == shared_opt_in_.end()) {
    int static_bytes = 0;
    {
      const RelaxedCaptureMode relaxed(driver_);
      check(driver_.func_get_attribute(&static_bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, function),
            "cuFuncGetAttribute(SHARED_SIZE_BYTES)");
    }
    SharedAllowance fresh;
    fresh.static_bytes = static_cast<std::uint32_t>(std::max(static_bytes, 0));
    fresh.dynamic_bytes = fresh.static_bytes < kDefaultSharedBytes ? kDefaultSharedBytes - fresh.static_bytes : 0;
    found = shared_opt_in_.emplace(function, fresh).first;
  }
  SharedAllowance& allowed = found->second;
  if (dynamic_bytes > allowed.dynamic_bytes) {
    const std::uint64_t total = std::uint64_t(allowed.static_bytes) + dynamic_bytes;
    if (max_shared_ && total > *max_shared_) {
      throw BackendError(fmt::format(
          "a launch asks {} B of shared memory per block on {} ({} B static + {} B dynamic): the device allows "
          "at most {} B (MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)",
          total, device_key(), allowed.static_bytes, dynamic_bytes, *max_shared_));
    }
    const RelaxedCaptureMode relaxed(driver_);
    check(driver_.func_set_attribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                     static_cast<int>(dynamic_bytes)),
          "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
    allowed.dynamic_bytes = dynamic_bytes;
  }
  tls_opt_in = LastAnswer<CUfunction>{id_, function, allowed.dynamic_bytes};
}

DevicePtr CudaBackend::alloc(std::size_t bytes) {
  const CudaContextScope scope = make_current();
  CUdeviceptr ptr = 0;
  check(driver_.mem_alloc(&ptr, bytes), "cuMemAlloc");
  return DevicePtr{static_cast<std::uint64_t>(ptr)};
}

void CudaBackend::free(DevicePtr ptr) {
  if (ptr.is_null()) {
    return;
  }
  const CudaContextScope scope = make_current();
  check(driver_.mem_free(static_cast<CUdeviceptr>(ptr.address)), "cuMemFree");
}

void CudaBackend::copy_to_device(DevicePtr dst, const void* src, std::size_t bytes) {
  const CudaContextScope scope = make_current();
  check(driver_.memcpy_htod(static_cast<CUdeviceptr>(dst.address), src, bytes), "cuMemcpyHtoD");
}

void CudaBackend::copy_to_host(void* dst, DevicePtr src, std::size_t bytes) {
  const CudaContextScope scope = make_current();
  check(driver_.memcpy_dtoh(dst, static_cast<CUdeviceptr>(src.address), bytes), "cuMemcpyDtoH");
}

void CudaBackend::synchronize(std::uint64_t stream) {
  const CudaContextScope scope = make_current();
  if (stream == 0) {
    check(driver_.ctx_synchronize(), "cuCtxSynchronize");
  } else {
    check(driver_.stream_synchronize(reinterpret_cast<CUstream>(stream)), "cuStreamSynchronize");
  }
}

bool CudaBackend::is_capturing(std::uint64_t stream) const { return cuda_stream_is_capturing(driver_, stream); }

void CudaBackend::prepare_launch(KernelHandle kernel, const LaunchConfig& config) {
  if (!kernel.present()) {
    throw BackendError("prepare of an absent kernel on " + device_key());
  }
  const CudaContextScope scope = make_current();
  opt_in_shared_memory(reinterpret_cast<CUfunction>(kernel.value), config.dynamic_shared_bytes);
  if (config.cluster_blocks > 1) {
    static_cast<void>(max_active_clusters(kernel, config));
  }
}

std::size_t CudaBackend::loaded_module_count() const {
  std::lock_guard lock(modules_mutex_);
  return modules_.size();
}

}  // namespace metrale
