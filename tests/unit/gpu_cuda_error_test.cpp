// gpu_cuda_error_test.cpp: a CUDA driver failure as data (gpu/cuda_error.hpp), without a GPU: the
// sticky errors that leave the context unusable are told from the refusals that leave it fine,
// and a DriverError keeps the code and the name a caller (the C ABI) reports.
#include <cuda.h>

#include <catch2/catch.hpp>

#include "gpu/cuda_error.hpp"

using namespace metrale;

TEST_CASE("a CUDA error's kind: sticky context errors, refusals, the rest", "[gpu][cuda]") {
  for (const CUresult sticky : {CUDA_ERROR_ILLEGAL_ADDRESS, CUDA_ERROR_LAUNCH_FAILED, CUDA_ERROR_ILLEGAL_INSTRUCTION,
                                CUDA_ERROR_MISALIGNED_ADDRESS, CUDA_ERROR_ASSERT, CUDA_ERROR_LAUNCH_TIMEOUT}) {
    INFO("CUresult " << static_cast<int>(sticky));
    CHECK(cuda_error_kind(sticky) == CudaErrorKind::kSticky);
  }
  for (const CUresult refusal :
       {CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, CUDA_ERROR_NO_BINARY_FOR_GPU,
        CUDA_ERROR_INVALID_CLUSTER_SIZE, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED}) {
    INFO("CUresult " << static_cast<int>(refusal));
    CHECK(cuda_error_kind(refusal) == CudaErrorKind::kRefusal);
  }
  CHECK(cuda_error_kind(CUDA_ERROR_OUT_OF_MEMORY) == CudaErrorKind::kOther);
  CHECK(cuda_error_kind(123456) == CudaErrorKind::kOther);
  CHECK(to_string(CudaErrorKind::kSticky) == "sticky");
  const DriverError error("cuLaunchKernel failed on cuda:0: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access)",
                          CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS");
  CHECK(error.code() == 700);
  CHECK(error.name() == "CUDA_ERROR_ILLEGAL_ADDRESS");
  CHECK(error.sticky());
  const BackendError& as_backend = error;  // callers that catch BackendError still see it
  CHECK_THAT(as_backend.what(), Catch::Contains("cuLaunchKernel"));
}
