// Corpus (cooperative groups): stream compaction with a warp-aggregated atomic. The threads of a
// warp that hold a positive value form a coalesced group; its first thread reserves room for all
// of them with one atomicAdd and broadcasts the base, and each writes at base + its rank. So
// *count ends as the number of positive values, and each warp's values lie in one run, in lane
// order.
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

namespace corpus_cg {

__global__ void compact_positive(const int* __restrict__ in, int* __restrict__ out, int* __restrict__ count,
                                 unsigned n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && in[i] > 0) {
    cg::coalesced_group active = cg::coalesced_threads();
    int base = 0;
    if (active.thread_rank() == 0) {
      base = atomicAdd(count, static_cast<int>(active.size()));
    }
    base = active.shfl(base, 0);
    out[base + active.thread_rank()] = in[i];
  }
}

}  // namespace corpus_cg
