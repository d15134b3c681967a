// Test kernels for the host backend: block reductions through shared memory and warp shuffles,
// written as plain CUDA C++ (they compile with NVRTC as well as through the host prelude).
#pragma once

namespace metrale_test {

// out[b] = sum of in[b*BLOCK*4 .. (b+1)*BLOCK*4) (elements past n count as 0), by a tree in shared
// memory with a barrier per level.
template <unsigned BLOCK>
__global__ void __launch_bounds__(BLOCK) block_sum(const float* __restrict__ in, float* __restrict__ out, unsigned n) {
  __shared__ float partial[BLOCK];
  const unsigned tid = threadIdx.x;
  const unsigned base = blockIdx.x * BLOCK * 4U;
  float acc = 0.0F;
  for (unsigned i = tid; i < BLOCK * 4U; i += BLOCK) {
    const unsigned g = base + i;
    if (g < n) {
      acc += __ldg(&in[g]);
    }
  }
  partial[tid] = acc;
  __syncthreads();
  for (unsigned stride = BLOCK / 2U; stride > 0U; stride /= 2U) {
    if (tid < stride) {
      partial[tid] += partial[tid + stride];
    }
    __syncthreads();
  }
  if (tid == 0U) {
    out[blockIdx.x] = partial[0];
  }
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset /= 2) {
    v += __shfl_xor_sync(0xffffffffU, v, offset);
  }
  return v;
}

// out[b] = dot(x[b*len ..], w[..]) with the BA-gates shape: lanes stride the row, xor-shuffle
// warp sums, warp partials in shared memory, thread 0 adds them. blockDim.x is a multiple of 32.
__global__ void row_dot(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ out,
                        unsigned len) {
  __shared__ float warp_partial[32];
  const unsigned tid = threadIdx.x;
  const float* row = x + static_cast<unsigned long>(blockIdx.x) * len;
  float acc = 0.0F;
  for (unsigned k = tid; k < len; k += blockDim.x) {
    acc = __fmaf_rn(row[k], w[k], acc);
  }
  acc = warp_sum(acc);
  if (tid % 32U == 0U) {
    warp_partial[tid / 32U] = acc;
  }
  __syncthreads();
  if (tid == 0U) {
    float total = 0.0F;
    for (unsigned i = 0; i < blockDim.x / 32U; ++i) {
      total += warp_partial[i];
    }
    out[blockIdx.x] = total;
  }
}

}  // namespace metrale_test
