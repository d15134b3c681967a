// gpu/cuda_relaxed_capture.hpp: this thread's stream-capture mode set to relaxed for a scope, then
// handed back as it was (cuThreadExchangeStreamCaptureMode twice). Why: in the default (global)
// mode a potentially unsafe call on ANY thread, such as a module load (cuModuleLoadData), a
// function attribute call or an occupancy query, invalidates a capture another thread has in
// progress (vLLM met it with background loads, PR #36587). The library makes such calls from its
// background build threads and from first launches, while an engine may be capturing elsewhere.
// Invariants: the mode is restored on every exit, an exception too; a driver table without the
// entry point (a test's fake) changes nothing; a failed exchange leaves the mode alone and
// restores nothing. Not copyable: one exchange, one restore, on the thread that made it.
#pragma once

#include <cuda.h>

#include "gpu/cuda_driver.hpp"

namespace metrale {

class RelaxedCaptureMode {
 public:
  explicit RelaxedCaptureMode(const CudaDriver& driver);
  ~RelaxedCaptureMode();
  RelaxedCaptureMode(const RelaxedCaptureMode&) = delete;
  RelaxedCaptureMode& operator=(const RelaxedCaptureMode&) = delete;

 private:
  const CudaDriver& driver_;
  CUstreamCaptureMode previous_ = CU_STREAM_CAPTURE_MODE_RELAXED;
  bool exchanged_ = false;
};

}  // namespace metrale
