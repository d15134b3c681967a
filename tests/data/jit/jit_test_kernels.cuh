// jit_test_kernels.cuh: small templates for the JIT tests: out[i] = in[i] * factor * BLOCK,
// and a bf16 round trip that needs the CUDA include directory.
#pragma once
#include <cuda_bf16.h>

#include "jit_test_math.cuh"

namespace jit_test {

template <int BLOCK>
__global__ void scale(const float* in, float* out, float factor, unsigned n) {
  __shared__ float tile[BLOCK];
  const unsigned i = blockIdx.x * BLOCK + threadIdx.x;
  tile[threadIdx.x] = i < n ? in[i] : 0.0f;
  __syncthreads();
  if (i < n) {
    out[i] = scaled(tile[threadIdx.x], factor * static_cast<float>(BLOCK));
  }
}

template <int LANES>
__global__ void to_bf16(const float* in, __nv_bfloat16* out, unsigned n) {
  const unsigned i = blockIdx.x * LANES + threadIdx.x;
  if (i < n) {
    out[i] = __float2bfloat16_rn(in[i]);
  }
}

}  // namespace jit_test
