// Corpus (cooperative groups): a grid-stride block sum in the style of the CUDA samples. Each
// warp-sized tile sums its threads' values with cg::reduce, the tile leaders stage the partial
// sums in shared memory, and the first tile sums those: out[blockIdx.x] = the block's total.
// Also the extrema of each tile with cg::less / cg::greater and its bits with cg::bit_xor.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

namespace cg = cooperative_groups;

namespace corpus_cg {

template <unsigned BLOCK>
__global__ void block_reduce(const float* __restrict__ in, float* __restrict__ out, unsigned n) {
  static_assert(BLOCK % 32 == 0 && BLOCK <= 1024, "BLOCK must be whole warps");
  __shared__ float partial[BLOCK / 32];
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);

  float sum = 0.0f;
  for (unsigned i = blockIdx.x * BLOCK + block.thread_rank(); i < n; i += gridDim.x * BLOCK) {
    sum += in[i];
  }
  sum = cg::reduce(warp, sum, cg::plus<float>());
  if (warp.thread_rank() == 0) {
    partial[warp.meta_group_rank()] = sum;
  }
  block.sync();
  if (warp.meta_group_rank() == 0) {
    float total = warp.thread_rank() < warp.meta_group_size() ? partial[warp.thread_rank()] : 0.0f;
    total = cg::reduce(warp, total, cg::plus<float>());
    if (warp.thread_rank() == 0) {
      out[blockIdx.x] = total;
    }
  }
}

// Per tile of TILE threads: lows/highs/bits[tile] = min, max and xor of its values.
template <unsigned TILE>
__global__ void tile_extrema(const int* __restrict__ in, int* __restrict__ lows, int* __restrict__ highs,
                             unsigned* __restrict__ bits) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<TILE> tile = cg::tiled_partition<TILE>(block);
  const unsigned i = blockIdx.x * blockDim.x + block.thread_rank();
  const int v = in[i];
  const int low = cg::reduce(tile, v, cg::less<int>());
  const int high = cg::reduce(tile, v, cg::greater<int>());
  const unsigned x = cg::reduce(tile, static_cast<unsigned>(v), cg::bit_xor<unsigned>());
  if (tile.thread_rank() == 0) {
    const unsigned t = i / TILE;
    lows[t] = low;
    highs[t] = high;
    bits[t] = x;
  }
}

}  // namespace corpus_cg
