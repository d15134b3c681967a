// tests/data/corpus/cg_multi_warp.cuh: multi-warp tiles as CUDA's samples write them: a
// block_tile_memory scratch in shared memory, tiled_partition<64..> of the block, cg::reduce over
// the tile, its shfl, any and all, and cg::inclusive_scan / exclusive_scan over it.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cooperative_groups/scan.h>

namespace cg = cooperative_groups;

namespace corpus_cg {

// Per tile: tile_sums[global tile] = the tile's sum, flags[global tile] = any(v > limit) * 2 +
// all(v > -limit); per thread: rotated[i] = the value of tile rank (rank + 37) % TileSize,
// inclusive[i] / exclusive[i] = the tile's scans of the values.
template <unsigned BlockSize, unsigned TileSize>
__global__ void multi_warp_tile(const int* in, int* tile_sums, int* flags, int* rotated, int* inclusive, int* exclusive,
                                int limit) {
  __shared__ cg::block_tile_memory<BlockSize> scratch;
  cg::thread_block block = cg::this_thread_block(scratch);
  cg::thread_block_tile<TileSize> tile = cg::tiled_partition<TileSize>(block);
  const unsigned i = blockIdx.x * BlockSize + threadIdx.x;
  const int v = in[i];
  const int sum = cg::reduce(tile, v, cg::plus<int>());
  const unsigned global_tile = blockIdx.x * tile.meta_group_size() + tile.meta_group_rank();
  const int any = tile.any(v > limit);
  const int all = tile.all(v > -limit);
  if (tile.thread_rank() == 0) {
    tile_sums[global_tile] = sum;
    flags[global_tile] = any * 2 + all;
  }
  rotated[i] = tile.shfl(v, (tile.thread_rank() + 37) % TileSize);
  tile.sync();
  inclusive[i] = cg::inclusive_scan(tile, v);
  exclusive[i] = cg::exclusive_scan(tile, v, cg::plus<int>());
}

// Scans over one-warp groups: a 16-lane tile (inclusive, max) and a coalesced group of the lanes
// whose value is odd (exclusive, sum); other lanes write -1 to coalesced_out.
__global__ void warp_scans(const int* in, int* tile_max, int* coalesced_out) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  const int v = in[i];
  cg::thread_block_tile<16> tile = cg::tiled_partition<16>(cg::this_thread_block());
  tile_max[i] = cg::inclusive_scan(tile, v, cg::greater<int>());
  coalesced_out[i] = -1;
  if (v % 2 != 0) {
    cg::coalesced_group odd = cg::coalesced_threads();
    coalesced_out[i] = cg::exclusive_scan(odd, v);
  }
}

}  // namespace corpus_cg
