// warp_vote.cu: warp vote and match intrinsics, and the block-wide votes of __syncthreads_*.
//   vote_any, vote_all      result[i] = __any_sync / __all_sync of input[i] over i's warp
//   ballot_popc             per warp: how many lanes hold an even value, and which (the ballot)
//   active_lanes            per thread: __popc(__activemask()) where every lane is active, so the
//                           count is the warp's size (32, or fewer in a partial last warp)
//   match_keys              per thread: how many lanes of its warp hold the same key
//                           (__match_any_sync), and whether all of them do (__match_all_sync)
//   warp_sums               per warp: __reduce_add_sync, __reduce_min_sync, __reduce_max_sync
//   block_votes             per block: __syncthreads_count / _and / _or of x > threshold

__global__ void vote_any(const unsigned int *input, unsigned int *result) {
  int tid = blockIdx.x * blockDim.x + threadIdx.x;
  result[tid] = __any_sync(0xffffffff, input[tid]);
}

__global__ void vote_all(const unsigned int *input, unsigned int *result) {
  int tid = blockIdx.x * blockDim.x + threadIdx.x;
  result[tid] = __all_sync(0xffffffff, input[tid]);
}

__global__ void ballot_popc(const int *values, unsigned int *ballots, int *even_counts) {
  int tid = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned int ballot = __ballot_sync(0xffffffff, values[tid] % 2 == 0);
  if (threadIdx.x % warpSize == 0) {
    int warp = tid / warpSize;
    ballots[warp] = ballot;
    even_counts[warp] = __popc(ballot);
  }
}

__global__ void active_lanes(int *counts) {
  int tid = blockIdx.x * blockDim.x + threadIdx.x;
  counts[tid] = __popc(__activemask());
}

__global__ void match_keys(const int *keys, int *same_count, int *all_same) {
  int tid = blockIdx.x * blockDim.x + threadIdx.x;
  int key = keys[tid];
  unsigned int peers = __match_any_sync(0xffffffff, key);
  int pred = 0;
  __match_all_sync(0xffffffff, key, &pred);
  same_count[tid] = __popc(peers);
  all_same[tid] = pred;
}

__global__ void warp_sums(const int *values, int *sums, int *mins, unsigned int *maxs) {
  int tid = blockIdx.x * blockDim.x + threadIdx.x;
  int v = values[tid];
  int sum = __reduce_add_sync(0xffffffff, v);
  int lo = __reduce_min_sync(0xffffffff, v);
  unsigned int hi = __reduce_max_sync(0xffffffff, (unsigned int)v);
  if (threadIdx.x % 32 == 0) {
    sums[tid / 32] = sum;
    mins[tid / 32] = lo;
    maxs[tid / 32] = hi;
  }
}

__global__ void block_votes(const float *x, float threshold, int *counts, int *alls, int *anys) {
  int tid = blockIdx.x * blockDim.x + threadIdx.x;
  int above = x[tid] > threshold;
  int count = __syncthreads_count(above);
  int all = __syncthreads_and(above);
  int any = __syncthreads_or(above);
  if (threadIdx.x == 0) {
    counts[blockIdx.x] = count;
    alls[blockIdx.x] = all;
    anys[blockIdx.x] = any;
  }
}
