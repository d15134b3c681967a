// tests/data/corpus/cg_labeled_partition.cuh: labeled_partition as engines use it, under the
// architecture guard it needs (sm_70+: __match_any_sync), so the host backend must both define
// __CUDA_ARCH__ and give labeled_partition.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

namespace cg = cooperative_groups;

namespace corpus_cg {

// Per warp, the lanes holding one label form a group (labeled_partition, sm_70+): each lane
// writes its group's sum of values, and its rank and the group's size as rank * 100 + size.
__global__ void label_sums(const int* labels, const int* values, int* sums, int* ranks) {
#if __CUDA_ARCH__ >= 700
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(cg::this_thread_block());
  const cg::coalesced_group same = cg::labeled_partition(warp, labels[i]);
  sums[i] = cg::reduce(same, values[i], cg::plus<int>());
  ranks[i] = static_cast<int>(same.thread_rank() * 100 + same.size());
#endif
}

}  // namespace corpus_cg
