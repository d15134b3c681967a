// cuda_graph_api.cpp: the graph entry points' table, resolved from the already loaded driver.
#include "gpu/cuda_graph_api.hpp"

#include <dlfcn.h>

#include <string>

#include "metrale/error.hpp"

namespace metrale {
namespace {

CudaGraphApi resolve() {
  // RTLD_NOLOAD: only a driver this process already opened (CudaDriver::load); never a second one.
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (library == nullptr) {
    throw BackendError("libcuda.so.1 is not loaded: open a CUDA runtime before the CUDA graph entry points");
  }
  const auto get_proc = reinterpret_cast<CudaGetProcAddress>(dlsym(library, "cuGetProcAddress_v2"));
  CudaGraphApi api;
  const char* missing = nullptr;
// METRALE_CUDA_SYMBOL spelled out: through the list, a name cuda.h #defines (cuStreamDestroy
// is cuStreamDestroy_v2) would be expanded before it reached that macro's ## and #.
#define METRALE_CUDA_GRAPH_LOAD(field, name, version) \
  store_cuda_symbol<PFN_##name##_v##version>(get_proc, api.field, #name, version, missing);
  METRALE_CUDA_GRAPH_ENTRY_POINTS(METRALE_CUDA_GRAPH_LOAD)
#undef METRALE_CUDA_GRAPH_LOAD
  if (missing != nullptr) {
    throw BackendError(std::string("the CUDA driver lacks ") + missing + " (CUDA graphs and their timing)");
  }
  return api;
}

}  // namespace

const CudaGraphApi& CudaGraphApi::load() {
  static const CudaGraphApi api = resolve();  // a throw leaves it unset: the next call retries
  return api;
}

void check_cuda_call(CUresult result, const char* call) {
  if (result != CUDA_SUCCESS) {
    const CudaDriverStatus& status = CudaDriver::load();
    throw BackendError(std::string(call) + " failed: " +
                       (status.driver != nullptr ? status.driver->describe(result)
                                                 : "CUresult " + std::to_string(static_cast<int>(result))));
  }
}

}  // namespace metrale
