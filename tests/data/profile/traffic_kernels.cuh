// traffic_kernels.cuh: small kernels whose memory traffic is known by hand, for the profile
// tests (tests/unit/profile_traffic_test.cpp). Plain CUDA C++, as the library's templates.
#pragma once

#include "../../../templates/metrale_arith.cuh"

namespace metrale_test_kernels {

// Threads per block the pipeline kernels' shared stages hold.
constexpr unsigned int kPipelineBlock = 128;

// A STAGES-deep cp.async pipeline over CHUNKS chunks, the shape of the library's mma K loop:
// STAGES - 1 groups issued ahead, then per chunk wait<STAGES - 2>, issue the chunk STAGES - 1
// ahead (an empty group past the end), use the landed chunk. Each group is one 16-byte copy per
// thread; with HALF_VALID the upper half of the threads zero-fill theirs (reading nothing).
// out[thread] is the XOR of the thread's CHUNKS vectors (zero for a zero-filling thread).
// Input: [blocks][CHUNKS][blockDim.x] uint4; blockDim.x <= kPipelineBlock.
template <unsigned int STAGES, unsigned int CHUNKS, bool HALF_VALID>
__global__ void async_pipeline(const uint4* __restrict__ in, uint4* __restrict__ out) {
  __shared__ __align__(16) uint4 stages[STAGES][kPipelineBlock];
  const unsigned int t = threadIdx.x;
  const bool valid = !HALF_VALID || t < blockDim.x / 2u;
  const uint4* src = in + static_cast<unsigned long long>(blockIdx.x) * CHUNKS * blockDim.x + t;
  for (unsigned int s = 0; s + 1u < STAGES; ++s) {
    if (s < CHUNKS) {
      metrale::kernels::async_copy_16(&stages[s][t], src + s * blockDim.x, valid);
    }
    metrale::kernels::async_copy_commit();
  }
  uint4 acc = make_uint4(0u, 0u, 0u, 0u);
  for (unsigned int c = 0; c < CHUNKS; ++c) {
    metrale::kernels::async_copy_wait<STAGES - 2u>();
    const unsigned int next = c + STAGES - 1u;
    if (next < CHUNKS) {
      metrale::kernels::async_copy_16(&stages[next % STAGES][t], src + next * blockDim.x, valid);
    }
    metrale::kernels::async_copy_commit();
    const uint4 v = stages[c % STAGES][t];
    acc = make_uint4(acc.x ^ v.x, acc.y ^ v.y, acc.z ^ v.z, acc.w ^ v.w);
  }
  metrale::kernels::async_copy_wait<0>();
  out[blockIdx.x * blockDim.x + t] = acc;
}

// Clusters of two: each block stages its 128-byte-per-warp slice of `in` in its dynamic shared
// memory (blockDim.x floats), and after the cluster barrier writes its partner's (rank ^ 1)
// slice: out[b][t] = in[b ^ 1][t]. The peer's shared memory is not device memory, so the device
// traffic is coalesced_copy's.
__global__ void cluster_swap(const float* __restrict__ in, float* __restrict__ out) {
  float* own = reinterpret_cast<float*>(metrale::kernels::dynamic_shared_memory());
  const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  own[threadIdx.x] = in[i];
  metrale::kernels::cluster_sync();
  const unsigned int partner = metrale::kernels::cluster_cta_rank() ^ 1u;
  out[i] = reinterpret_cast<const float*>(metrale::kernels::cluster_peer_shared_memory(partner))[threadIdx.x];
  metrale::kernels::cluster_sync();  // the partner reads this block's memory until here
}

// out[i] = in[i]: each warp reads and writes 32 consecutive floats (128 bytes, 4 sectors).
__global__ void coalesced_copy(const float* __restrict__ in, float* __restrict__ out) {
  const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = in[i];
}

// Each lane reads a 16-byte vector: a warp reads 512 bytes (16 sectors) in one request.
__global__ void vector_copy(const uint4* __restrict__ in, uint4* __restrict__ out) {
  const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = __ldg(in + i);
}

// Lane i reads in[32 i]: 128 bytes apart, so each of a warp's 32 lanes needs its own sector.
__global__ void strided_read(const float* __restrict__ in, float* __restrict__ out) {
  const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = in[32u * i];
}

// Every thread reads in[0]: one sector per request, one sector of DRAM for the whole grid.
__global__ void broadcast_read(const float* __restrict__ in, float* __restrict__ out) {
  const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = __ldg(in);
}

// Every warp of a block reads the same 32-float row (row blockIdx.x % 2 of `rows`): the block
// moves the row from L2 once, the grid reads two rows from DRAM.
__global__ void block_reused_row(const float* __restrict__ rows, float* __restrict__ out) {
  const unsigned int lane = threadIdx.x % 32u;
  const float v = rows[(blockIdx.x % 2u) * 32u + lane];
  out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

// FMAS fused multiply-adds, one expf and one warp sum per thread.
template <unsigned int FMAS>
__global__ void counted_math(const float* __restrict__ in, float* __restrict__ out) {
  const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  float acc = in[i];
  for (unsigned int j = 0; j < FMAS; ++j) {
    acc = __fmaf_rn(acc, 0.5f, 1.0f);
  }
  acc = expf(acc * 1e-3f);
  acc += __shfl_xor_sync(0xffffffffu, acc, 1);
  out[i] = acc;
}

}  // namespace metrale_test_kernels
