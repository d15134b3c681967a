// cuda_error.cpp: which CUresults leave the context corrupt (gpu/cuda_error.hpp). The sticky list
// is the driver's own (cuda.h: "the context cannot be used ... must be destroyed"); the refusals
// are the errors of a launch or a load that did not happen.
#include "gpu/cuda_error.hpp"

#include <cuda.h>

namespace metrale {

std::string_view to_string(CudaErrorKind kind) {
  switch (kind) {
    case CudaErrorKind::kRefusal:
      return "refusal";
    case CudaErrorKind::kSticky:
      return "sticky";
    case CudaErrorKind::kOther:
      return "other";
  }
  return "other";
}

CudaErrorKind cuda_error_kind(int code) {
  switch (static_cast<CUresult>(code)) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
      return CudaErrorKind::kSticky;
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_INVALID_HANDLE:
    case CUDA_ERROR_NOT_FOUND:
    case CUDA_ERROR_INVALID_IMAGE:
    case CUDA_ERROR_NO_BINARY_FOR_GPU:
    case CUDA_ERROR_INVALID_PTX:
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:
    case CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING:
    case CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE:
    case CUDA_ERROR_INVALID_CLUSTER_SIZE:
    case CUDA_ERROR_NOT_SUPPORTED:
    case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED:
    case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED:
    case CUDA_ERROR_STREAM_CAPTURE_IMPLICIT:
    case CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD:
      return CudaErrorKind::kRefusal;
    default:
      return CudaErrorKind::kOther;
  }
}

}  // namespace metrale
