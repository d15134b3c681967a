// cuda_context_scope.cpp: save the thread's context, set ours, restore on exit.
#include "gpu/cuda_context_scope.hpp"

namespace metrale {

CudaContextScope::CudaContextScope(const CudaDriver& driver, CUcontext context) : driver_(driver) {
  // A failed query leaves nothing to restore; the call still runs in our context.
  const bool known = driver_.ctx_get_current(&previous_) == CUDA_SUCCESS;
  if (!known || previous_ != context) {
    driver_.ctx_set_current(context);
  }
  restore_ = known && previous_ != context;
}

CudaContextScope::~CudaContextScope() {
  if (restore_) {
    driver_.ctx_set_current(previous_);
  }
}

}  // namespace metrale
