// cluster.cuh: test kernels for thread-block clusters (metrale_arith.cuh's cluster_cta_rank,
// cluster_cta_count, cluster_sync, cluster_peer_shared_memory), launched with
// LaunchConfig::cluster_blocks. A block stages its row of `in`, scaled by rank + 1 (a factor kept
// in static __shared__, which must be per block), in its dynamic shared memory; after a cluster
// barrier every block sums the cluster's staged rows through each peer's memory. Others report
// the rank and count, and misuse the cluster barrier (one block never arrives, one throws, one
// reads a peer that exited).
#pragma once

#include "../../../templates/metrale_arith.cuh"

namespace metrale_test {

// Block b (linear over x and y) owns row b of `in` and `out`, `words` floats each. With c blocks
// per cluster and the cluster's rows r_0 .. r_{c-1} (rank order):
// out[b][i] = sum over ranks k of in[r_k][i] * (k + 1), added in rank order from 0.0f,
// plus (rank of b + 1) * 1024 read from static shared memory after the barrier.
__global__ void cluster_peer_sum(const float* in, float* out, unsigned int words) {
  __shared__ float rank_factor;
  const unsigned int rank = metrale::kernels::cluster_cta_rank();
  const unsigned int count = metrale::kernels::cluster_cta_count();
  const unsigned long long row =
      static_cast<unsigned long long>(blockIdx.y) * gridDim.x + static_cast<unsigned long long>(blockIdx.x);
  float* own = reinterpret_cast<float*>(metrale::kernels::dynamic_shared_memory());
  if (threadIdx.x == 0u) {
    rank_factor = static_cast<float>(rank + 1u);
  }
  __syncthreads();
  for (unsigned int i = threadIdx.x; i < words; i += blockDim.x) {
    own[i] = in[row * words + i] * rank_factor;
  }
  metrale::kernels::cluster_sync();
  for (unsigned int i = threadIdx.x; i < words; i += blockDim.x) {
    float sum = 0.0f;
    for (unsigned int k = 0; k < count; ++k) {
      sum += reinterpret_cast<const float*>(metrale::kernels::cluster_peer_shared_memory(k))[i];
    }
    out[row * words + i] = sum + rank_factor * 1024.0f;
  }
  // The peers read this block's memory until here: it must outlive their reads.
  metrale::kernels::cluster_sync();
}

// out[2 b] = rank, out[2 b + 1] = count, for linear block b; every thread must agree.
__global__ void cluster_rank_count(unsigned int* out) {
  const unsigned int rank = metrale::kernels::cluster_cta_rank();
  const unsigned int count = metrale::kernels::cluster_cta_count();
  __shared__ unsigned int disagree;
  if (threadIdx.x == 0u) {
    disagree = 0u;
  }
  __syncthreads();
  if (rank != metrale::kernels::cluster_cta_rank() || count != metrale::kernels::cluster_cta_count()) {
    disagree = 1u;
  }
  __syncthreads();
  const unsigned int block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  if (threadIdx.x == 0u) {
    out[2u * block] = disagree == 0u ? rank : 0xffffffffu;
    out[2u * block + 1u] = count;
  }
}

// Rank 1's thread 0 goes to the cluster barrier while its other threads wait at a block
// barrier: rank 1 never arrives, and rank 0 waits at the cluster barrier for it.
__global__ void cluster_rank1_never_arrives(float* out) {
  if (metrale::kernels::cluster_cta_rank() == 1u && threadIdx.x != 0u) {
    __syncthreads();
  }
  metrale::kernels::cluster_sync();
  out[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f;
}

// Rank 1 asks for the memory of a rank its cluster does not have, after rank 0 already waits.
__global__ void cluster_rank1_bad_peer(float* out) {
  if (metrale::kernels::cluster_cta_rank() == 1u) {
    out[blockIdx.x * blockDim.x + threadIdx.x] =
        *reinterpret_cast<const float*>(metrale::kernels::cluster_peer_shared_memory(9u));
  }
  metrale::kernels::cluster_sync();
}

// Odd and even threads wait at two different cluster barriers (.aligned: every thread of the
// block must execute the same one).
__global__ void cluster_split_sites(float* out) {
  if (threadIdx.x % 2u == 1u) {
    metrale::kernels::cluster_sync();
  } else {
    metrale::kernels::cluster_sync();
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f;
}

// Rank 1 fills its dynamic shared memory and exits without a cluster barrier; rank 0 passes two
// cluster barriers (an exited block counts as arrived at each) and then copies rank 1's `words`
// words to out[cluster][..]: a read after the peer exited, which a GPU leaves undefined and the
// host backend answers with the 0xCD poison.
__global__ void cluster_read_exited_peer(unsigned int* out, unsigned int words) {
  unsigned int* own = reinterpret_cast<unsigned int*>(metrale::kernels::dynamic_shared_memory());
  if (metrale::kernels::cluster_cta_rank() == 1u) {
    for (unsigned int i = threadIdx.x; i < words; i += blockDim.x) {
      own[i] = 0x11223344u + i;
    }
    return;
  }
  metrale::kernels::cluster_sync();
  metrale::kernels::cluster_sync();
  const unsigned int* peer = reinterpret_cast<const unsigned int*>(metrale::kernels::cluster_peer_shared_memory(1u));
  const unsigned int cluster = blockIdx.x / metrale::kernels::cluster_cta_count();
  for (unsigned int i = threadIdx.x; i < words; i += blockDim.x) {
    out[cluster * words + i] = peer[i];
  }
}

}  // namespace metrale_test
