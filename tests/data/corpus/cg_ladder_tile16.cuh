// Corpus (cooperative groups): the classic reduction ladder with the first add during the load,
// whose last 16 partial sums are finished by a thread_block_tile<16> with shfl_down instead of
// the old volatile warp-synchronous code: out[blockIdx.x] = the sum of the block's 2 * BLOCK
// elements.
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

namespace corpus_cg {

template <unsigned BLOCK>
__global__ void ladder_tile16(const int* __restrict__ in, int* __restrict__ out, unsigned n) {
  static_assert(BLOCK >= 32 && (BLOCK & (BLOCK - 1)) == 0, "BLOCK must be a power of two from 32");
  __shared__ int sdata[BLOCK];
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<16> tile = cg::tiled_partition<16>(block);
  const unsigned t = block.thread_rank();
  const unsigned i = blockIdx.x * (2 * BLOCK) + t;
  sdata[t] = (i < n ? in[i] : 0) + (i + BLOCK < n ? in[i + BLOCK] : 0);
  block.sync();
  for (unsigned s = BLOCK / 2; s >= 16; s >>= 1) {
    if (t < s) {
      sdata[t] += sdata[t + s];
    }
    block.sync();
  }
  if (tile.meta_group_rank() == 0) {
    int v = sdata[tile.thread_rank()];
    for (unsigned offset = 8; offset > 0; offset >>= 1) {
      v += tile.shfl_down(v, offset);
    }
    if (tile.thread_rank() == 0) {
      out[blockIdx.x] = v;
    }
  }
}

}  // namespace corpus_cg
