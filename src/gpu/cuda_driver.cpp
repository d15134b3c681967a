// cuda_driver.cpp: dlopen of libcuda.so.1 and entry-point resolution through cuGetProcAddress_v2,
// each name at the ABI version of the PFN type it is stored as (see cuda_driver.hpp).
#include "gpu/cuda_driver.hpp"

#include <dlfcn.h>

#include "ground/log.hpp"

namespace metrale {

void* cuda_driver_symbol(CudaGetProcAddress get_proc_address, const char* name, int version) {
  void* address = nullptr;
  CUdriverProcAddressQueryResult found{};
  if (get_proc_address == nullptr ||
      get_proc_address(name, &address, version, CU_GET_PROC_ADDRESS_DEFAULT, &found) != CUDA_SUCCESS ||
      found != CU_GET_PROC_ADDRESS_SUCCESS) {
    return nullptr;
  }
  return address;
}

namespace {

CudaDriverStatus load_driver() {
  static CudaDriver driver;
  CudaDriverStatus status;
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* error = dlerror();
    status.reason = std::string("libcuda.so.1 could not be loaded: ") + (error != nullptr ? error : "unknown");
    return status;
  }
  const auto get_proc = reinterpret_cast<CudaGetProcAddress>(dlsym(library, "cuGetProcAddress_v2"));
  if (get_proc == nullptr) {
    status.reason = "libcuda.so.1 lacks cuGetProcAddress_v2 (a driver older than CUDA 12.0)";
    return status;  // the library stays loaded: unloading a driver is never safe
  }
  const char* missing = nullptr;
  METRALE_CUDA_SYMBOL(get_proc, driver.init, cuInit, 2000, missing);
  METRALE_CUDA_SYMBOL(get_proc, driver.device_get_count, cuDeviceGetCount, 2000, missing);
  METRALE_CUDA_SYMBOL(get_proc, driver.device_get, cuDeviceGet, 2000, missing);
  METRALE_CUDA_SYMBOL(get_proc, driver.device_get_attribute, cuDeviceGetAttribute, 2000, missing);
  METRALE_CUDA_SYMBOL(get_proc, driver.device_get_name, cuDeviceGetName, 2000, missing);
  METRALE_CUDA_SYMBOL(get_proc, driver.primary_ctx_retain, cuDevicePrimaryCtxRetain, 7000, missing);
  METRALE_CUDA_SYMBOL(get_proc, driver.primary_ctx_release, cuDevicePrimaryCtxRelease, 11000, missing);
  METRALE_CUDA_SYMBOL(get_proc, driver.ctx_set_current, cuCtxSetCurrent, 4000, missing);
  METRALE_CUDA_SYMBOL(get_proc, driver.ctx_get_current, cuCtxGetCurrent, 4000, missing);
  METRALE_CUDA_SYMBOL(get_proc, driver.ctx_synchronize, cuCtxSynchronize, 2000, missing);
  METRALE_CUDA_SYMBOL(get_proc, driver.module_load_data, cuModuleLoadData, 2000, missing);
  METRALE_CUDA_SYMBOL(get_proc, driver.module_get_function, cuModuleGetFunction, 2000, missing);
  METRALE_CUDA_SYMBOL(get_proc, driver.module_unload, cuModuleUnload, 2000, missing);
  METRALE_CUDA_SYMBOL(get_proc, driver.launch_kernel, cuLaunchKernel, 4000, missing);
  METRALE_CUDA_SYMBOL(get_proc, driver.func_set_attribute, cuFuncSetAttribute, 9000, missing);
  METRALE_CUDA_SYMBOL(get_proc, driver.func_get_attribute, cuFuncGetAttribute, 2020, missing);
  METRALE_CUDA_SYMBOL(get_proc, driver.mem_alloc, cuMemAlloc, 3020, missing);
  METRALE_CUDA_SYMBOL(get_proc, driver.mem_free, cuMemFree, 3020, missing);
  METRALE_CUDA_SYMBOL(get_proc, driver.memcpy_htod, cuMemcpyHtoD, 3020, missing);
  METRALE_CUDA_SYMBOL(get_proc, driver.memcpy_dtoh, cuMemcpyDtoH, 3020, missing);
  METRALE_CUDA_SYMBOL(get_proc, driver.stream_synchronize, cuStreamSynchronize, 2000, missing);
  METRALE_CUDA_SYMBOL(get_proc, driver.get_error_name, cuGetErrorName, 6000, missing);
  METRALE_CUDA_SYMBOL(get_proc, driver.get_error_string, cuGetErrorString, 6000, missing);
  METRALE_CUDA_SYMBOL(get_proc, driver.stream_create, cuStreamCreate, 2000, missing);
  METRALE_CUDA_SYMBOL(get_proc, driver.stream_destroy, cuStreamDestroy, 4000, missing);
  METRALE_CUDA_SYMBOL(get_proc, driver.memcpy_htod_async, cuMemcpyHtoDAsync, 3020, missing);
  METRALE_CUDA_SYMBOL(get_proc, driver.memcpy_dtoh_async, cuMemcpyDtoHAsync, 3020, missing);
  METRALE_CUDA_SYMBOL(get_proc, driver.thread_exchange_capture_mode, cuThreadExchangeStreamCaptureMode, 10010, missing);
  METRALE_CUDA_SYMBOL(get_proc, driver.device_get_uuid, cuDeviceGetUuid, 11040, missing);
  METRALE_CUDA_SYMBOL(get_proc, driver.driver_get_version, cuDriverGetVersion, 2020, missing);
  if (missing != nullptr) {
    status.reason = std::string("libcuda.so.1 lacks the entry point ") + missing;
    return status;
  }
  const char* optional_missing = nullptr;  // a driver without these still launches everything else
  METRALE_CUDA_SYMBOL(get_proc, driver.launch_kernel_ex, cuLaunchKernelEx, 11060, optional_missing);
  METRALE_CUDA_SYMBOL(get_proc, driver.occupancy_max_active_clusters, cuOccupancyMaxActiveClusters, 11070,
                      optional_missing);
  if (optional_missing != nullptr) {
    logger().debug("libcuda.so.1 lacks {}: cluster launches will be refused", optional_missing);
  }
  const char* capture_missing = nullptr;
  METRALE_CUDA_SYMBOL(get_proc, driver.stream_get_capture_info, cuStreamGetCaptureInfo, 10010, capture_missing);
  METRALE_CUDA_SYMBOL(get_proc, driver.stream_is_capturing, cuStreamIsCapturing, 10000, capture_missing);
  if (driver.stream_get_capture_info == nullptr && driver.stream_is_capturing == nullptr) {
    logger().warn("libcuda.so.1 lacks {}: op calls cannot tell a graph capture", capture_missing);
  }
  if (const CUresult result = driver.init(0); result != CUDA_SUCCESS) {
    status.reason = "cuInit failed: " + driver.describe(result);
    return status;
  }
  int count = 0;
  if (const CUresult result = driver.device_get_count(&count); result != CUDA_SUCCESS) {
    status.reason = "cuDeviceGetCount failed: " + driver.describe(result);
    return status;
  }
  if (count == 0) {
    status.reason = "the CUDA driver reports no device";
    return status;
  }
  status.driver = &driver;
  status.device_count = count;
  return status;
}

}  // namespace

std::string CudaDriver::describe(CUresult result) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (get_error_name == nullptr || get_error_name(result, &name) != CUDA_SUCCESS || name == nullptr) {
    return "CUresult " + std::to_string(static_cast<int>(result));
  }
  std::string out = name;
  if (get_error_string != nullptr && get_error_string(result, &text) == CUDA_SUCCESS && text != nullptr) {
    out += std::string(" (") + text + ")";
  }
  return out;
}

const CudaDriverStatus& CudaDriver::load() {
  static const CudaDriverStatus status = [] {
    CudaDriverStatus loaded = load_driver();
    if (!loaded.available()) {
      logger().info("no CUDA device: {}", loaded.reason);
    }
    return loaded;
  }();
  return status;
}

}  // namespace metrale
