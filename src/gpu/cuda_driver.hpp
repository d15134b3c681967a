// gpu/cuda_driver.hpp: the CUDA Driver API, loaded at run time with
// dlopen("libcuda.so.1") and cuGetProcAddress; the library never links libcuda.
// Invariants: load() runs once per process; a missing library, a missing entry point, a
// failed cuInit or zero devices is a "no device" state with a reason, never an exception
// or a crash; every pointer of a loaded driver is non-null.
#pragma once

#include <cuda.h>

#include <string>

namespace metrale {

struct CudaDriverStatus;

struct CudaDriver {
  decltype(&::cuInit) init = nullptr;
  decltype(&::cuDeviceGetCount) device_get_count = nullptr;
  decltype(&::cuDeviceGet) device_get = nullptr;
  decltype(&::cuDeviceGetAttribute) device_get_attribute = nullptr;
  decltype(&::cuDeviceGetName) device_get_name = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) primary_ctx_retain = nullptr;
  decltype(&::cuDevicePrimaryCtxRelease) primary_ctx_release = nullptr;
  decltype(&::cuCtxSetCurrent) ctx_set_current = nullptr;
  decltype(&::cuCtxGetCurrent) ctx_get_current = nullptr;
  decltype(&::cuCtxSynchronize) ctx_synchronize = nullptr;
  decltype(&::cuModuleLoadData) module_load_data = nullptr;
  decltype(&::cuModuleGetFunction) module_get_function = nullptr;
  decltype(&::cuModuleUnload) module_unload = nullptr;
  decltype(&::cuLaunchKernel) launch_kernel = nullptr;
  decltype(&::cuMemAlloc) mem_alloc = nullptr;
  decltype(&::cuMemFree) mem_free = nullptr;
  decltype(&::cuMemcpyHtoD) memcpy_htod = nullptr;
  decltype(&::cuMemcpyDtoH) memcpy_dtoh = nullptr;
  decltype(&::cuStreamSynchronize) stream_synchronize = nullptr;
  decltype(&::cuGetErrorName) get_error_name = nullptr;
  decltype(&::cuGetErrorString) get_error_string = nullptr;

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

}  // namespace metrale
