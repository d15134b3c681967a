// cuda_driver.cpp: dlopen of libcuda.so.1 and entry-point resolution. cuGetProcAddress_v2
// (asked for CUDA_VERSION's ABI) is preferred, since the plain exported names may be
// older ABIs; when it is absent the versioned export names that cuda.h maps to are used.
#include "gpu/cuda_driver.hpp"

#include <dlfcn.h>

#include "ground/log.hpp"

#define METRALE_STRINGIFY_EXPANDED(x) METRALE_STRINGIFY(x)
#define METRALE_STRINGIFY(x) #x

namespace metrale {
namespace {

using GetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

struct Resolver {
  void* library = nullptr;
  GetProcAddress get_proc_address = nullptr;
  std::string missing;

  // `base` is the API name ("cuMemAlloc"); `exported` the versioned symbol cuda.h maps it to.
  template <typename Fn>
  void resolve(Fn& out, const char* base, const char* exported) {
    void* address = nullptr;
    if (get_proc_address != nullptr) {
      CUdriverProcAddressQueryResult found{};
      if (get_proc_address(base, &address, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &found) != CUDA_SUCCESS ||
          found != CU_GET_PROC_ADDRESS_SUCCESS) {
        address = nullptr;
      }
    }
    if (address == nullptr) {
      address = dlsym(library, exported);
    }
    if (address == nullptr && missing.empty()) {
      missing = base;
    }
    out = reinterpret_cast<Fn>(address);
  }
};

#define METRALE_RESOLVE(resolver, field, fn) (resolver).resolve((field), #fn, METRALE_STRINGIFY_EXPANDED(fn))

CudaDriverStatus load_driver() {
  static CudaDriver driver;
  CudaDriverStatus status;
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* error = dlerror();
    status.reason = std::string("libcuda.so.1 could not be loaded: ") + (error != nullptr ? error : "unknown");
    return status;
  }
  Resolver resolver{library, reinterpret_cast<GetProcAddress>(dlsym(library, "cuGetProcAddress_v2")), {}};
  METRALE_RESOLVE(resolver, driver.init, cuInit);
  METRALE_RESOLVE(resolver, driver.device_get_count, cuDeviceGetCount);
  METRALE_RESOLVE(resolver, driver.device_get, cuDeviceGet);
  METRALE_RESOLVE(resolver, driver.device_get_attribute, cuDeviceGetAttribute);
  METRALE_RESOLVE(resolver, driver.device_get_name, cuDeviceGetName);
  METRALE_RESOLVE(resolver, driver.primary_ctx_retain, cuDevicePrimaryCtxRetain);
  METRALE_RESOLVE(resolver, driver.primary_ctx_release, cuDevicePrimaryCtxRelease);
  METRALE_RESOLVE(resolver, driver.ctx_set_current, cuCtxSetCurrent);
  METRALE_RESOLVE(resolver, driver.ctx_get_current, cuCtxGetCurrent);
  METRALE_RESOLVE(resolver, driver.ctx_synchronize, cuCtxSynchronize);
  METRALE_RESOLVE(resolver, driver.module_load_data, cuModuleLoadData);
  METRALE_RESOLVE(resolver, driver.module_get_function, cuModuleGetFunction);
  METRALE_RESOLVE(resolver, driver.module_unload, cuModuleUnload);
  METRALE_RESOLVE(resolver, driver.launch_kernel, cuLaunchKernel);
  METRALE_RESOLVE(resolver, driver.mem_alloc, cuMemAlloc);
  METRALE_RESOLVE(resolver, driver.mem_free, cuMemFree);
  METRALE_RESOLVE(resolver, driver.memcpy_htod, cuMemcpyHtoD);
  METRALE_RESOLVE(resolver, driver.memcpy_dtoh, cuMemcpyDtoH);
  METRALE_RESOLVE(resolver, driver.stream_synchronize, cuStreamSynchronize);
  METRALE_RESOLVE(resolver, driver.get_error_name, cuGetErrorName);
  METRALE_RESOLVE(resolver, driver.get_error_string, cuGetErrorString);
  if (!resolver.missing.empty()) {
    status.reason = "libcuda.so.1 lacks the entry point " + resolver.missing + " (driver too old for CUDA " +
                    std::to_string(CUDA_VERSION / 1000) + ")";
    return status;  // the library stays loaded: unloading a driver is never safe
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
