// engine_mirror.cuh: the test engine's own kernels (tests/unit/engine_kernels_test.cpp), not a
// copy of any library template. A block mirrors one BLOCK-element chunk of x through shared
// memory and scales it: y[c * BLOCK + t] = s * x[c * BLOCK + BLOCK - 1 - t], for whole chunks.
// The twin does GROUPS chunks per block with the same arithmetic, so it writes the parent's
// bytes; both need a barrier between the shared-memory write and read.
#pragma once

namespace engine {

template <int BLOCK>
__device__ __forceinline__ void mirror_chunk(const float* x, float* y, float s, float* tile, int chunk) {
  const int t = static_cast<int>(threadIdx.x);
  tile[t] = x[chunk * BLOCK + t];
  __syncthreads();
  y[chunk * BLOCK + t] = s * tile[BLOCK - 1 - t];
  __syncthreads();
}

template <int BLOCK>
__global__ void __launch_bounds__(BLOCK) mirror_scale(const float* x, float* y, float s, int chunks) {
  __shared__ float tile[BLOCK];
  const int chunk = static_cast<int>(blockIdx.x);
  if (chunk < chunks) {
    mirror_chunk<BLOCK>(x, y, s, tile, chunk);
  }
}

template <int BLOCK, int GROUPS>
__global__ void __launch_bounds__(BLOCK) mirror_scale_twin(const float* x, float* y, float s, int chunks) {
  __shared__ float tile[BLOCK];
  for (int g = 0; g < GROUPS; ++g) {
    const int chunk = static_cast<int>(blockIdx.x) * GROUPS + g;
    if (chunk < chunks) {  // uniform over the block: every thread reaches the same barriers
      mirror_chunk<BLOCK>(x, y, s, tile, chunk);
    }
  }
}

}  // namespace engine
