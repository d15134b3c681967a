// gpu/cuda_context_scope.hpp: makes a CUDA context current for one backend call and gives the
// calling thread its own context back afterwards.
// Invariant: after the scope ends the thread's current context is the one it had before (none
// included), so an engine that keeps its own context current on a thread is never switched off it
// by a library call.
#pragma once

#include <cuda.h>

#include "gpu/cuda_driver.hpp"

namespace metrale {

class CudaContextScope {
 public:
  CudaContextScope(const CudaDriver& driver, CUcontext context);
  ~CudaContextScope();
  CudaContextScope(const CudaContextScope&) = delete;
  CudaContextScope& operator=(const CudaContextScope&) = delete;

 private:
  const CudaDriver& driver_;
  CUcontext previous_ = nullptr;
  bool restore_ = false;
};

}  // namespace metrale
