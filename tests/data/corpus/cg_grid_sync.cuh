// Corpus (cooperative groups): a two-phase sum that waits for the whole grid between its phases
// with this_grid().sync(), which needs a cooperative launch (cudaLaunchCooperativeKernel). Each
// block writes its partial sum, the grid synchronises, then block 0 adds the partial sums.
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

namespace corpus_cg {

__global__ void grid_two_phase_sum(const float* __restrict__ in, float* __restrict__ partial, float* __restrict__ out,
                                   unsigned n) {
  cg::grid_group grid = cg::this_grid();
  cg::thread_block block = cg::this_thread_block();
  if (block.thread_rank() == 0) {
    float sum = 0.0f;
    for (unsigned i = blockIdx.x * blockDim.x; i < n && i < (blockIdx.x + 1) * blockDim.x; ++i) {
      sum += in[i];
    }
    partial[blockIdx.x] = sum;
  }
  grid.sync();
  if (grid.thread_rank() == 0) {
    float total = 0.0f;
    for (unsigned b = 0; b < grid.num_blocks(); ++b) {
      total += partial[b];
    }
    *out = total;
  }
}

}  // namespace corpus_cg
