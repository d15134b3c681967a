// half_axpy.cuh: y = a * x + y on __half elements through <cuda_fp16.h>'s conversions and
// intrinsics, the toolkit's own header (include/).
#pragma once
#include <cuda_fp16.h>

__global__ void half_axpy(const __half* x, __half* y, float a, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    y[i] = __float2half(fmaf(a, __half2float(x[i]), __half2float(y[i])));
  }
}
