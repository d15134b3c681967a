// cuda_relaxed_capture.cpp: the scope of gpu/cuda_relaxed_capture.hpp.
#include "gpu/cuda_relaxed_capture.hpp"

namespace metrale {

RelaxedCaptureMode::RelaxedCaptureMode(const CudaDriver& driver) : driver_(driver) {
  if (driver_.thread_exchange_capture_mode == nullptr) {
    return;
  }
  previous_ = CU_STREAM_CAPTURE_MODE_RELAXED;
  exchanged_ = driver_.thread_exchange_capture_mode(&previous_) == CUDA_SUCCESS;  // previous_: the old mode
}

RelaxedCaptureMode::~RelaxedCaptureMode() {
  if (exchanged_) {
    driver_.thread_exchange_capture_mode(&previous_);
  }
}

}  // namespace metrale
