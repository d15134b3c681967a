// gpu_cuda_graph_api_test.cpp: the CUDA graph entry points' table (gpu/cuda_graph_api.hpp) where
// CI runs, without a GPU: asked for before any CUDA runtime loaded libcuda.so.1 it refuses by
// name (it never opens a driver of its own), and where a driver is loaded it is complete; a failed
// call is a BackendError naming the call and the result.
#include <cuda.h>
#include <dlfcn.h>

#include <catch2/catch.hpp>

#include "gpu/cuda_graph_api.hpp"
#include "metrale/error.hpp"

using namespace metrale;

TEST_CASE("the CUDA graph table is the loaded driver's, complete, or a refusal naming what is missing",
          "[gpu][cuda][graph]") {
  if (dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD) == nullptr) {
    CHECK_THROWS_AS(CudaGraphApi::load(), BackendError);
    CHECK_THROWS_WITH(CudaGraphApi::load(),
                      Catch::Contains("libcuda.so.1 is not loaded") && Catch::Contains("open a CUDA runtime before"));
    CHECK(dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD) == nullptr);  // and it loaded none itself
    return;
  }
  const CudaGraphApi& api = CudaGraphApi::load();
  CHECK(&api == &CudaGraphApi::load());  // resolved once
#define METRALE_CUDA_GRAPH_CHECK(field, name, version) CHECK(api.field != nullptr);
  METRALE_CUDA_GRAPH_ENTRY_POINTS(METRALE_CUDA_GRAPH_CHECK)
#undef METRALE_CUDA_GRAPH_CHECK
}

TEST_CASE("check_cuda_call passes success and names the call and the result of a failure", "[gpu][cuda][graph]") {
  CHECK_NOTHROW(check_cuda_call(CUDA_SUCCESS, "cuGraphLaunch"));
  CHECK_THROWS_AS(check_cuda_call(CUDA_ERROR_INVALID_VALUE, "cuGraphLaunch"), BackendError);
  // The driver's name where one is loaded, else the bare code.
  CHECK_THROWS_WITH(check_cuda_call(CUDA_ERROR_INVALID_VALUE, "cuGraphLaunch"),
                    Catch::StartsWith("cuGraphLaunch failed: ") &&
                        (Catch::Contains("CUDA_ERROR_INVALID_VALUE") || Catch::EndsWith("CUresult 1")));
}
