// Corpus (cooperative groups): one row of kGroupTourFields ints per thread recording what the
// groups say in a 2-D block: a tile's shuffles, ranks and meta group, a dynamic tiled_partition,
// the block's and grid's coordinates, and a coalesced group of the threads whose value is odd
// (its rank, size, sum by cg::reduce, ballot and shfl_down), so the test can check each against
// the CUDA rules written out independently.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

namespace cg = cooperative_groups;

namespace corpus_cg {

constexpr unsigned kGroupTourFields = 16;

template <unsigned TILE>
__global__ void group_tour(const int* __restrict__ in, int* __restrict__ out) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<TILE> tile = cg::tiled_partition<TILE>(block);
  cg::thread_group half = cg::tiled_partition(block, TILE / 2);
  cg::grid_group grid = cg::this_grid();
  const unsigned long long i = grid.thread_rank();
  const int v = in[i];
  int* row = out + i * kGroupTourFields;
  row[0] = tile.shfl(v, TILE - 1);
  row[1] = tile.shfl_up(v, 1);
  row[2] = tile.shfl_down(v, 2);
  row[3] = tile.shfl_xor(v, 1);
  row[4] = static_cast<int>(tile.thread_rank());
  row[5] = static_cast<int>(tile.meta_group_rank() * 1000 + tile.meta_group_size());
  row[6] = static_cast<int>(half.thread_rank() * 1000 + half.size());
  row[7] = static_cast<int>(block.thread_rank() * 1000 + block.size());
  row[8] = static_cast<int>(block.thread_index().y * 1000 + block.group_index().y);
  row[9] = static_cast<int>(grid.block_rank() * 1000 + grid.num_blocks() * 10 + (grid.is_valid() ? 1 : 0));
  cg::sync(half);
  cg::sync(block);
  if (v % 2 != 0) {
    cg::coalesced_group odd = cg::coalesced_threads();
    row[10] = static_cast<int>(odd.thread_rank());
    row[11] = static_cast<int>(odd.size());
    row[12] = cg::reduce(odd, v, cg::plus<int>());
    row[13] = static_cast<int>(odd.ballot(v > 0));
    row[14] = odd.shfl_down(v, 1);
    row[15] = odd.shfl(v, 0);
  } else {
    for (unsigned f = 10; f < kGroupTourFields; ++f) {
      row[f] = -1;
    }
  }
}

}  // namespace corpus_cg
