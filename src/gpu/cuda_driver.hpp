// gpu/cuda_driver.hpp: the CUDA Driver API, loaded at run time with
// dlopen("libcuda.so.1") and cuGetProcAddress; the library never links libcuda.
// Each entry point is typed by its versioned PFN (cudaTypedefs.h) and asked for at exactly that
// ABI version: asking at CUDA_VERSION returns the newest ABI of a name, whose signature may differ
// (CUDA 13's cuCtxSynchronize takes a context; called with none it synchronised a garbage
// handle and failed with CUDA_ERROR_CONTEXT_IS_DESTROYED on the first H200 run).
// Invariants: load() runs once per process; a missing library, a missing entry point, a
// failed cuInit or zero devices is a "no device" state with a reason, never an exception
// or a crash; every pointer of a loaded driver is non-null, except the optional entry points
// (marked below), which only the launches that need them check.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

#include <string>

namespace metrale {

struct CudaDriverStatus;

struct CudaDriver {
  PFN_cuInit_v2000 init = nullptr;
  PFN_cuDeviceGetCount_v2000 device_get_count = nullptr;
  PFN_cuDeviceGet_v2000 device_get = nullptr;
  PFN_cuDeviceGetAttribute_v2000 device_get_attribute = nullptr;
  PFN_cuDeviceGetName_v2000 device_get_name = nullptr;
  PFN_cuDevicePrimaryCtxRetain_v7000 primary_ctx_retain = nullptr;
  PFN_cuDevicePrimaryCtxRelease_v11000 primary_ctx_release = nullptr;
  PFN_cuCtxSetCurrent_v4000 ctx_set_current = nullptr;
  PFN_cuCtxGetCurrent_v4000 ctx_get_current = nullptr;
  PFN_cuCtxSynchronize_v2000 ctx_synchronize = nullptr;
  PFN_cuModuleLoadData_v2000 module_load_data = nullptr;
  PFN_cuModuleGetFunction_v2000 module_get_function = nullptr;
  PFN_cuModuleUnload_v2000 module_unload = nullptr;
  PFN_cuLaunchKernel_v4000 launch_kernel = nullptr;
  // Optional (null on a driver without it): only cluster launches (cluster_blocks > 1) use it.
  PFN_cuLaunchKernelEx_v11060 launch_kernel_ex = nullptr;
  // Optional too: without it max_active_clusters answers "unknown".
  PFN_cuOccupancyMaxActiveClusters_v11070 occupancy_max_active_clusters = nullptr;
  PFN_cuFuncSetAttribute_v9000 func_set_attribute = nullptr;
  PFN_cuFuncGetAttribute_v2020 func_get_attribute = nullptr;  // a function's static shared memory
  // Optional: whether a stream is capturing into a graph (gpu/cuda_capture.hpp asks the first
  // there is; without both, no stream is seen capturing).
  PFN_cuStreamGetCaptureInfo_v10010 stream_get_capture_info = nullptr;
  PFN_cuStreamIsCapturing_v10000 stream_is_capturing = nullptr;
  PFN_cuMemAlloc_v3020 mem_alloc = nullptr;
  PFN_cuMemFree_v3020 mem_free = nullptr;
  PFN_cuMemcpyHtoD_v3020 memcpy_htod = nullptr;
  PFN_cuMemcpyDtoH_v3020 memcpy_dtoh = nullptr;
  PFN_cuStreamSynchronize_v2000 stream_synchronize = nullptr;
  PFN_cuGetErrorName_v6000 get_error_name = nullptr;
  // Verification's isolation and identity (GpuBackend::isolate, device_uuid, driver_version).
  PFN_cuStreamCreate_v2000 stream_create = nullptr;
  PFN_cuStreamDestroy_v4000 stream_destroy = nullptr;
  PFN_cuMemcpyHtoDAsync_v3020 memcpy_htod_async = nullptr;
  PFN_cuMemcpyDtoHAsync_v3020 memcpy_dtoh_async = nullptr;
  PFN_cuThreadExchangeStreamCaptureMode_v10010 thread_exchange_capture_mode = nullptr;
  PFN_cuDeviceGetUuid_v11040 device_get_uuid = nullptr;
  PFN_cuDriverGetVersion_v2020 driver_get_version = nullptr;
  PFN_cuGetErrorString_v6000 get_error_string = nullptr;

  // "CUDA_ERROR_INVALID_VALUE (invalid argument)"; "CUresult 123" when the driver has no name.
  [[nodiscard]] std::string describe(CUresult result) const;

  // The process-wide driver, loaded and initialised on first call (thread-safe).
  static const CudaDriverStatus& load();
};

struct CudaDriverStatus {
  const CudaDriver* driver = nullptr;  // null in the "no device" state
  int device_count = 0;
  std::string reason;  // why there is no device: "libcuda.so.1 not found: ...", "cuInit: ..."

  [[nodiscard]] bool available() const { return driver != nullptr && device_count > 0; }
};

// cuGetProcAddress_v2 as exported by libcuda.so.1 (CUDA 12.0 and newer drivers).
using CudaGetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

// The entry point `name` at ABI `version` ("cuMemAlloc", 3020), or null when the driver lacks it.
[[nodiscard]] void* cuda_driver_symbol(CudaGetProcAddress get_proc_address, const char* name, int version);

// Stores the entry point `name` at ABI `version` in `field`; a missing one leaves `field` null and
// names itself in `missing` (the first only).
template <typename Pfn>
void store_cuda_symbol(CudaGetProcAddress get_proc_address, Pfn& field, const char* name, int version,
                       const char*& missing) {
  field = reinterpret_cast<Pfn>(cuda_driver_symbol(get_proc_address, name, version));
  if (field == nullptr && missing == nullptr) {
    missing = name;
  }
}

}  // namespace metrale

// Resolves `field` at exactly the ABI of its type PFN_<name>_v<version>: a field of another type
// does not compile, so the signature called and the version asked for cannot drift apart.
#define METRALE_CUDA_SYMBOL(get_proc_address, field, name, version, missing) \
  ::metrale::store_cuda_symbol<PFN_##name##_v##version>((get_proc_address), (field), #name, (version), (missing))
