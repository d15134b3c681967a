// dynamic_shared.cuh: test kernels for dynamic shared memory (metrale_arith.cuh's
// dynamic_shared_memory()): a block stages its slice of `in` in dynamic shared memory and writes
// it back rotated by one word, so every thread reads words other threads wrote; a probe copies
// the buffer's first bytes before anything writes them.
#pragma once

#include "../../../templates/metrale_arith.cuh"

namespace metrale_test {

// out[b][i] = in[b][(i + 1) % words] for block b, through `words` floats of dynamic shared memory.
__global__ void dynamic_shared_rotate(const float* in, float* out, unsigned int words) {
  float* staged = reinterpret_cast<float*>(metrale::kernels::dynamic_shared_memory());
  const unsigned long long base = static_cast<unsigned long long>(blockIdx.x) * words;
  for (unsigned int i = threadIdx.x; i < words; i += blockDim.x) {
    staged[i] = in[base + i];
  }
  __syncthreads();
  for (unsigned int i = threadIdx.x; i < words; i += blockDim.x) {
    out[base + i] = staged[(i + 1u) % words];
  }
}

// Thread 0 copies the first 16 bytes of the block's dynamic shared memory as they are at start.
__global__ void dynamic_shared_first_bytes(unsigned char* out) {
  if (threadIdx.x == 0u) {
    const unsigned char* staged = metrale::kernels::dynamic_shared_memory();
    for (unsigned int i = 0; i < 16u; ++i) {
      out[blockIdx.x * 16u + i] = staged[i];
    }
  }
}

}  // namespace metrale_test
