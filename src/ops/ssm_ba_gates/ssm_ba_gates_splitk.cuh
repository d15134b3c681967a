// ssm_ba_gates_splitk.cuh: the Gated DeltaNet input gates at decode sizes (a few tokens), with
// K split over a thread-block cluster so the weight read (N x K bf16: 0.98 MB at N 96, K 5120)
// is spread over the whole device instead of the parent's 24 blocks. The same outputs as
// ssm_ba_gates.cuh (acc[m][n] = sum_k x[m][k] * W[n][k], then ba_gates_store), not the same bytes
// (another summation order: each CTA sums its K range, the cluster adds the ranges in rank order).
// Owned by the kernels area.
// Template parameters:
// - BLOCK: threads per CTA, whole warps (32 .. 1024);
// - TOKENS: the tokens a CTA owns (its grid.y tile; 1 .. 128);
// - OUTS: the outputs a CTA owns (1 .. 16).
// Launch: grid (ceil(N / OUTS) x s, ceil(M / TOKENS), 1) in 1-D clusters of s CTAs along x (s = 1
// without one; the op picks s with ba_gates_splitk_cluster_blocks): cluster c of row y owns
// outputs [c OUTS, (c + 1) OUTS) of tokens [y TOKENS, (y + 1) TOKENS), and its CTA of rank r the
// r-th contiguous 1/s of K's 16-byte vectors. Dynamic shared memory: TOKENS x OUTS floats, the
// CTA's partial sums (ba_gates_splitk_shared_bytes).
// Data flow: a token is one warp's job (warp w takes tokens w, w + warps, ... of the tile): its
// lanes stride the CTA's K range in 16-byte vectors (kv = begin + lane, + 32, ...), each x vector
// loaded once and multiplied into the OUTS outputs' accumulators (bf16x8_dot_step, as the twin
// does per read of the row); warp_xor_sum reduces each output's lanes and lane 0 stores the
// (token, output) pair's partial. After a cluster sync, CTA r sums pairs r, r + s, ...
// over the cluster's ranks in rank order (through distributed shared memory) and applies the
// parent's gate math (ba_gates_store); a last cluster sync keeps each CTA's partials alive until
// its readers are done.
// Why: at decode sizes the parent runs ceil(N / 4) x M blocks, each streaming 4 whole weight rows
// of K with 64 lanes (10 dependent 16-byte steps a lane at K 5120), on 24 of the device's SMs at
// M = 1; here 128 CTAs (N 96, 6 outputs, s = 8) each read 1/8 of 6 rows once, so every SM
// streams ~7.5 KiB of the weight and a lane's loads for one token (2-3 x vectors, 6 weight
// vectors each) are independent: one memory round trip per token a warp owns (8 at M = 64 with
// 8 warps). The weight crosses L2 once per token tile; x once per output column of clusters.
// Invariants:
// - an output's value is fixed by (the split s, the lane-strided sweep of each rank's range,
//   warp_xor_sum, the rank-ordered sum), none of which depends on timing: the same launch gives
//   the same bytes;
// - every thread of every CTA reaches both cluster syncs (the loops only skip work, and the skips
//   are warp-uniform: a token is a warp's);
// - nothing is written outside [0, M) x [0, 2 nv) (pairs past M or N skip their store);
// - token x row-stride and output x K products are 64-bit.
// Arguments: as ssm_ba_gates.cuh. x rows and weight 16-byte aligned, K % 8 == 0 (the op checks).
#pragma once

#include "metrale_arith.cuh"
#include "ssm_ba_gates.cuh"

namespace metrale {
namespace kernels {

// One resident CTA per SM is all a decode launch has (128 CTAs on 132 SMs); the bound lets ptxas
// give each thread the registers it wants (without it sm_100 capped the kernel at 32 and spilled).
constexpr unsigned int kBaGatesSplitKMinBlocksPerSm = 1;

template <unsigned int BLOCK, unsigned int TOKENS, unsigned int OUTS>
__global__ void __launch_bounds__(BLOCK, kBaGatesSplitKMinBlocksPerSm)
    ssm_ba_gates_splitk(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ weight,
                        const float* __restrict__ a_log, const float* __restrict__ dt_bias,
                        float* __restrict__ gate_out, unsigned int m, unsigned int n, unsigned int k,
                        unsigned int k_stride, unsigned int gate_stride, unsigned int nv,
                        unsigned int vheads_per_group) {
  static_assert(BLOCK % 32u == 0u && BLOCK >= 32u && BLOCK <= 1024u, "BLOCK must be whole warps in [32, 1024]");
  static_assert(TOKENS >= 1u && TOKENS <= 128u, "TOKENS must be in [1, 128]");
  static_assert(OUTS >= 1u && OUTS <= 16u, "OUTS must be in [1, 16]");
  constexpr unsigned int kWarps = BLOCK / 32u;
  constexpr unsigned int kPairs = TOKENS * OUTS;
  const unsigned int splits = cluster_cta_count();
  const unsigned int rank = cluster_cta_rank();
  const unsigned int column = blockIdx.x / splits;
  const unsigned int token0 = blockIdx.y * TOKENS;
  const unsigned int k_vec = k / 8u;
  const unsigned int kv_begin = static_cast<unsigned int>(static_cast<unsigned long long>(k_vec) * rank / splits);
  const unsigned int kv_end = static_cast<unsigned int>(static_cast<unsigned long long>(k_vec) * (rank + 1u) / splits);
  float* partials = reinterpret_cast<float*>(dynamic_shared_memory());
  const unsigned int warp = threadIdx.x / 32u;
  const unsigned int lane = threadIdx.x % 32u;

  // This CTA's K range of each (token, output) pair, partials[token * OUTS + output]; outputs
  // past N accumulate nothing and are never read.
  const unsigned long long first_out = static_cast<unsigned long long>(column) * OUTS;
  for (unsigned int t = warp; t < TOKENS && token0 + t < m; t += kWarps) {
    const uint4* x_row = reinterpret_cast<const uint4*>(x + static_cast<unsigned long long>(token0 + t) * k_stride);
    float acc[OUTS];
    for (unsigned int o = 0; o < OUTS; ++o) {
      acc[o] = 0.0f;
    }
    for (unsigned int kv = kv_begin + lane; kv < kv_end; kv += 32u) {
      const uint4 xv = __ldg(x_row + kv);
      for (unsigned int o = 0; o < OUTS; ++o) {
        if (first_out + o < n) {
          const uint4* w_row = reinterpret_cast<const uint4*>(weight + (first_out + o) * k);
          acc[o] = bf16x8_dot_step(acc[o], xv, __ldg(w_row + kv));
        }
      }
    }
    for (unsigned int o = 0; o < OUTS; ++o) {
      acc[o] = warp_xor_sum(acc[o]);
      if (lane == 0u) {
        partials[t * OUTS + o] = acc[o];
      }
    }
  }
  cluster_sync();

  // Rank r finishes pairs r, r + s, ...: the ranks' partials summed in rank order.
  for (unsigned int pair = rank + splits * threadIdx.x; pair < kPairs; pair += splits * BLOCK) {
    const unsigned int token = token0 + pair / OUTS;
    const unsigned long long n_out = first_out + pair % OUTS;
    if (token >= m || n_out >= n) {
      continue;
    }
    float sum = 0.0f;
    for (unsigned int peer = 0; peer < splits; ++peer) {
      sum += reinterpret_cast<const float*>(cluster_peer_shared_memory(peer))[pair];
    }
    ba_gates_store(sum, static_cast<unsigned int>(n_out), nv, vheads_per_group, a_log, dt_bias,
                   gate_out + static_cast<unsigned long long>(token) * gate_stride);
  }
  // The peers read this CTA's partials until they pass here; they must outlive those reads.
  cluster_sync();
}

}  // namespace kernels
}  // namespace metrale

// The shipped variants the host backend instantiates (src/host/builtin_kernel_registration.hpp
// defines the macro; NVRTC and the host JIT never see these lines).
#ifdef METRALE_HOST_KERNEL
METRALE_HOST_KERNEL("ssm_ba_gates_splitk", 256, 64, 6, 0, metrale::kernels::ssm_ba_gates_splitk<256, 64, 6>)
#endif
