// tests/data/corpus/mixed_includes.cuh: a kernel with the includes a .cu file written for nvcc
// keeps at its top: <cuda_runtime.h> (whose declarations name `dim3 gridDim` parameters), C and
// C++ library headers, and __half arithmetic from <cuda_fp16.h>. NVRTC has no <stdio.h>,
// <assert.h>, <string.h>, <stdint.h> or <cstdint> of its own: the registry gives it minimal ones
// (jit/nvrtc_c_headers), as Jitify does; the host backend reads the system's.
#include <assert.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cstdint>

namespace corpus_mixed {

// y[i] = a * x[i] + y[i], with a passed through __half (a value __half holds exactly).
__global__ void axpy_half_scale(const float* x, float* y, float a, uint32_t n) {
  assert(n > 0);
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  const float scale = __half2float(__float2half(a));
  if (i < n) {
    y[i] = scale * x[i] + y[i];
  }
}

}  // namespace corpus_mixed
