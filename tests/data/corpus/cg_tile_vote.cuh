// Corpus (cooperative groups): votes over tiles. Per tile of TILE threads, with p = in[i] > limit:
// anys/alls[tile] = tile.any(p) / tile.all(p), ballots[tile] = tile.ballot(p) (bit r: rank r).
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

namespace corpus_cg {

template <unsigned TILE>
__global__ void tile_vote(const int* __restrict__ in, int limit, int* __restrict__ anys, int* __restrict__ alls,
                          unsigned* __restrict__ ballots) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<TILE> tile = cg::tiled_partition<TILE>(block);
  const unsigned i = blockIdx.x * blockDim.x + block.thread_rank();
  const int p = in[i] > limit;
  const int any = tile.any(p);
  const int all = tile.all(p);
  const unsigned ballot = tile.ballot(p);
  if (tile.thread_rank() == 0) {
    const unsigned t = i / TILE;
    anys[t] = any;
    alls[t] = all;
    ballots[t] = ballot;
  }
}

}  // namespace corpus_cg
