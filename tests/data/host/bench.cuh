// Kernels that measure the host backend: one that only syncs (the cost of a switch), and one
// with the BA-gates shape (per thread: strided loads, FMAs, xor-shuffle warp sums, a barrier).
#pragma once

namespace metrale_test {

// Every thread meets its warp `rounds` times; nothing else.
__global__ void shuffle_storm(float* out, unsigned rounds) {
  float v = static_cast<float>(threadIdx.x);
  for (unsigned r = 0; r < rounds; ++r) {
    v += __shfl_xor_sync(0xffffffffU, v, 1);
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

// Every thread meets the whole block `rounds` times.
__global__ void barrier_storm(float* out, unsigned rounds) {
  __shared__ float slot[1024];
  float v = static_cast<float>(threadIdx.x);
  for (unsigned r = 0; r < rounds; ++r) {
    slot[threadIdx.x] = v;
    __syncthreads();
    v += slot[(threadIdx.x + 1U) % blockDim.x];
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

// `outputs` groups of 5 xor shuffles per thread over a row of `len` floats: with 20 outputs that
// is 100 shuffles per thread, the load of the BA-gates twin at its real shape.
__global__ void gemv_like(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ out,
                          unsigned len, unsigned outputs) {
  __shared__ float partial[8];
  const float* row = x + static_cast<unsigned long>(blockIdx.x) * len;
  for (unsigned o = 0; o < outputs; ++o) {
    const float* wrow = w + static_cast<unsigned long>(o) * len;
    float acc = 0.0F;
    for (unsigned k = threadIdx.x; k < len; k += blockDim.x) {
      acc = __fmaf_rn(row[k], wrow[k], acc);
    }
    for (int offset = 16; offset > 0; offset /= 2) {
      acc += __shfl_xor_sync(0xffffffffU, acc, offset);
    }
    if (threadIdx.x % 32U == 0U) {
      partial[threadIdx.x / 32U] = acc;
    }
    __syncthreads();
    if (threadIdx.x == 0U) {
      float total = 0.0F;
      for (unsigned i = 0; i < blockDim.x / 32U; ++i) {
        total += partial[i];
      }
      out[blockIdx.x * outputs + o] = total;
    }
    __syncthreads();
  }
}

}  // namespace metrale_test
