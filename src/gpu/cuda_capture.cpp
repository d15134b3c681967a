// cuda_capture.cpp: the capture query of gpu/cuda_capture.hpp.
#include "gpu/cuda_capture.hpp"

namespace metrale {
namespace {

bool capture_refusal(CUresult result) {
  switch (result) {
    case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED:
    case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED:
    case CUDA_ERROR_STREAM_CAPTURE_MERGE:
    case CUDA_ERROR_STREAM_CAPTURE_UNMATCHED:
    case CUDA_ERROR_STREAM_CAPTURE_UNJOINED:
    case CUDA_ERROR_STREAM_CAPTURE_ISOLATION:
    case CUDA_ERROR_STREAM_CAPTURE_IMPLICIT:
    case CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD:
      return true;
    default:
      return false;
  }
}

}  // namespace

bool cuda_stream_is_capturing(const CudaDriver& driver, std::uint64_t stream) {
  if (stream == 0) {
    return false;
  }
  const auto handle = reinterpret_cast<CUstream>(stream);
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  CUresult result = CUDA_SUCCESS;
  if (driver.stream_get_capture_info != nullptr) {
    cuuint64_t id = 0;
    result = driver.stream_get_capture_info(handle, &status, &id);
  } else if (driver.stream_is_capturing != nullptr) {
    result = driver.stream_is_capturing(handle, &status);
  } else {
    return false;
  }
  if (result != CUDA_SUCCESS) {
    return capture_refusal(result);
  }
  return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

}  // namespace metrale
