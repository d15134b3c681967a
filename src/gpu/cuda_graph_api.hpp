// gpu/cuda_graph_api.hpp: the CUDA graph entry points that the library's CudaDriver does not hold
// and that its GPU tests and its benchmark need: a stream of their own, stream capture,
// instantiate, launch and destroy, and the events and the device copy the benchmark times a
// graph with. They come from the libcuda.so.1 the library already loaded (dlopen with RTLD_NOLOAD,
// each name through cuGetProcAddress at its PFN's ABI by METRALE_CUDA_SYMBOL, as
// gpu/cuda_driver.cpp does), so CudaDriver keeps only what the library itself calls.
// Invariants: one list, METRALE_CUDA_GRAPH_ENTRY_POINTS, declares every field and loads it, so a
// field's type and the ABI asked for cannot drift apart; load() resolves the table once per
// process and returns it complete (every pointer non-null), else throws a BackendError naming
// the first missing entry point, or that libcuda.so.1 is not loaded yet (a later call retries);
// check_cuda_call throws a BackendError naming the call and the driver's name of the error.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

#include "gpu/cuda_driver.hpp"

// X(field, name, version): the field holding PFN_<name>_v<version>.
#define METRALE_CUDA_GRAPH_ENTRY_POINTS(X)           \
  X(stream_create, cuStreamCreate, 2000)             \
  X(stream_destroy, cuStreamDestroy, 4000)           \
  X(stream_synchronize, cuStreamSynchronize, 2000)   \
  X(begin_capture, cuStreamBeginCapture, 10010)      \
  X(end_capture, cuStreamEndCapture, 10000)          \
  X(instantiate, cuGraphInstantiateWithFlags, 11040) \
  X(launch, cuGraphLaunch, 10000)                    \
  X(exec_destroy, cuGraphExecDestroy, 10000)         \
  X(graph_destroy, cuGraphDestroy, 10000)            \
  X(event_create, cuEventCreate, 2000)               \
  X(event_destroy, cuEventDestroy, 4000)             \
  X(event_record, cuEventRecord, 2000)               \
  X(event_synchronize, cuEventSynchronize, 2000)     \
  X(event_elapsed, cuEventElapsedTime, 2000)         \
  X(copy_async, cuMemcpyDtoDAsync, 3020)

namespace metrale {

struct CudaGraphApi {
#define METRALE_CUDA_GRAPH_FIELD(field, name, version) PFN_##name##_v##version field = nullptr;
  METRALE_CUDA_GRAPH_ENTRY_POINTS(METRALE_CUDA_GRAPH_FIELD)
#undef METRALE_CUDA_GRAPH_FIELD

  // The process's table, resolved on the first call that finds libcuda.so.1 loaded (a CUDA
  // runtime opened before); thread-safe.
  static const CudaGraphApi& load();
};

// Nothing when `result` is CUDA_SUCCESS; else a BackendError "<call> failed: <the driver's name
// and text of result>".
void check_cuda_call(CUresult result, const char* call);

}  // namespace metrale
