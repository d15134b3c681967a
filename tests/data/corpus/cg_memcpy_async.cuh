// tests/data/corpus/cg_memcpy_async.cuh: a block stages its slice of the input into shared
// memory with cg::memcpy_async and cg::wait, then each thread reads its mirror's element.
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>

namespace cg = cooperative_groups;

namespace corpus_cg {

template <unsigned BlockSize>
__global__ void staged_mirror(const float* in, float* out) {
  __shared__ float stage[BlockSize];
  cg::thread_block block = cg::this_thread_block();
  cg::memcpy_async(block, stage, in + blockIdx.x * BlockSize, sizeof(float) * BlockSize);
  cg::wait(block);
  out[blockIdx.x * BlockSize + threadIdx.x] = stage[BlockSize - 1 - threadIdx.x] * 2.0f;
}

}  // namespace corpus_cg
