// tests/support/cuda_graph_api.hpp: the CUDA graph entry points a GPU test (and the bench's
// graph clock) needs beside the library's: streams, stream capture, instantiate, launch. Taken
// from the driver the library already loaded (dlopen with RTLD_NOLOAD, cuGetProcAddress at each
// PFN's ABI, as src/gpu/cuda_driver.cpp does), so the library's CudaDriver keeps only what it uses.
// Invariants: load() throws BackendError naming a missing entry point; check() names the call.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>

#include <string>

#include "gpu/cuda_driver.hpp"
#include "metrale/error.hpp"

namespace metrale::test {

struct CudaGraphApi {
  PFN_cuStreamCreate_v2000 stream_create = nullptr;
  PFN_cuStreamDestroy_v4000 stream_destroy = nullptr;
  PFN_cuStreamBeginCapture_v10010 begin_capture = nullptr;
  PFN_cuStreamEndCapture_v10000 end_capture = nullptr;
  PFN_cuGraphInstantiateWithFlags_v11040 instantiate = nullptr;
  PFN_cuGraphLaunch_v10000 launch = nullptr;
  PFN_cuGraphExecDestroy_v10000 exec_destroy = nullptr;
  PFN_cuGraphDestroy_v10000 graph_destroy = nullptr;
  PFN_cuStreamSynchronize_v2000 stream_synchronize = nullptr;

  static CudaGraphApi load() {
    void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (library == nullptr) {
      throw BackendError("libcuda.so.1 is not loaded: open a CUDA runtime before the graph API");
    }
    const auto get_proc = reinterpret_cast<CudaGetProcAddress>(dlsym(library, "cuGetProcAddress_v2"));
    CudaGraphApi api;
    const char* missing = nullptr;
    METRALE_CUDA_SYMBOL(get_proc, api.stream_create, cuStreamCreate, 2000, missing);
    METRALE_CUDA_SYMBOL(get_proc, api.stream_destroy, cuStreamDestroy, 4000, missing);
    METRALE_CUDA_SYMBOL(get_proc, api.begin_capture, cuStreamBeginCapture, 10010, missing);
    METRALE_CUDA_SYMBOL(get_proc, api.end_capture, cuStreamEndCapture, 10000, missing);
    METRALE_CUDA_SYMBOL(get_proc, api.instantiate, cuGraphInstantiateWithFlags, 11040, missing);
    METRALE_CUDA_SYMBOL(get_proc, api.launch, cuGraphLaunch, 10000, missing);
    METRALE_CUDA_SYMBOL(get_proc, api.exec_destroy, cuGraphExecDestroy, 10000, missing);
    METRALE_CUDA_SYMBOL(get_proc, api.graph_destroy, cuGraphDestroy, 10000, missing);
    METRALE_CUDA_SYMBOL(get_proc, api.stream_synchronize, cuStreamSynchronize, 2000, missing);
    if (missing != nullptr) {
      throw BackendError(std::string("the CUDA driver lacks ") + missing + " (CUDA graphs)");
    }
    return api;
  }

  static void check(CUresult result, const char* call) {
    if (result != CUDA_SUCCESS) {
      const CudaDriverStatus& status = CudaDriver::load();
      throw BackendError(std::string(call) + " failed: " +
                         (status.driver != nullptr ? status.driver->describe(result) : std::to_string(int(result))));
    }
  }
};

}  // namespace metrale::test
