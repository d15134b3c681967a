// ssm_ba_gates.cuh: the Gated DeltaNet input gates, acc[m][n] = sum_k x[m][k] * W[n][k] followed
// by the beta / gate math, as the parent dense_gemm_ba_gates_prefill and its Hopper twin.
// Owned by the kernels area.
// Invariants:
// - an output's value is fixed by (lane-strided kv sweep kv = lane, lane + LANES, ...;
//   bf16x8_dot_step; warp_xor_sum; warp_pair_sum; ba_gates_store), which both kernels share,
//   so the twin's output bytes equal the parent's;
// - threads whose output n >= N still reach every shuffle and barrier and only skip the store;
// - token x row-stride and output x K products are 64-bit.
// Arguments (both kernels, in this order): x (bf16 [M][K_stride]), weight (bf16 [N][K]),
// a_log, dt_bias (fp32 [nv]), gate_out (fp32 [M][gate_stride]), m, n, k, k_stride,
// gate_stride, nv, vheads_per_group. x rows and weight must be 16-byte aligned (the op checks).
#pragma once

#include "metrale_arith.cuh"

namespace metrale {
namespace kernels {

// Writes one accumulated output into its token's [gate(nv), beta(nv)] row: within each group
// of 2 * vheads_per_group outputs, the first half is beta, the second gate.
__device__ inline void ba_gates_store(float acc, unsigned int n_out, unsigned int nv, unsigned int vheads_per_group,
                                      const float* __restrict__ a_log, const float* __restrict__ dt_bias,
                                      float* __restrict__ gate_row) {
  const unsigned int group_dim = 2u * vheads_per_group;
  const unsigned int within = n_out % group_dim;
  const unsigned int base = (n_out / group_dim) * vheads_per_group;
  if (within < vheads_per_group) {
    gate_row[nv + base + within] = gate_sigmoid(acc);
  } else {
    const unsigned int vh = base + (within - vheads_per_group);
    gate_row[vh] = gate_decay(acc, __ldg(a_log + vh), __ldg(dt_bias + vh));
  }
}

// Two resident blocks per SM: without it ptxas caps the twin at 64 registers on sm_100/sm_103
// and spills its GROUPS accumulators; with it every shipped arch compiles with 0 spills.
constexpr unsigned int kBaGatesMinBlocksPerSm = 2;

template <unsigned int BLOCK, unsigned int LANES>
struct BaGatesShape {
  static_assert(LANES == 64, "an output is reduced by exactly two warps (warp_even + warp_odd)");
  static_assert(BLOCK % LANES == 0, "BLOCK must be a whole number of 64-lane output groups");
  static_assert(BLOCK >= 64 && BLOCK <= 1024, "BLOCK must be in [64, 1024]");
  static constexpr unsigned int kOuts = BLOCK / LANES;  // outputs per block (per group tile)
  static constexpr unsigned int kWarps = BLOCK / 32;
};

// The parent: grid (M, ceil(N / OUTS)), one output per LANES threads; the row is read N times.
template <unsigned int BLOCK, unsigned int LANES>
__global__ void __launch_bounds__(BLOCK, kBaGatesMinBlocksPerSm)
    dense_gemm_ba_gates_prefill(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ weight,
                                const float* __restrict__ a_log, const float* __restrict__ dt_bias,
                                float* __restrict__ gate_out, unsigned int m, unsigned int n, unsigned int k,
                                unsigned int k_stride, unsigned int gate_stride, unsigned int nv,
                                unsigned int vheads_per_group) {
  using Shape = BaGatesShape<BLOCK, LANES>;
  __shared__ float warp_partials[Shape::kWarps];
  const unsigned int token = blockIdx.x;
  const unsigned int local_out = threadIdx.x / LANES;
  const unsigned int lane = threadIdx.x % LANES;
  const unsigned int n_out = blockIdx.y * Shape::kOuts + local_out;
  const unsigned int k_vec = k / 8u;
  (void)m;

  float acc = 0.0f;
  if (n_out < n) {
    const uint4* x_row = reinterpret_cast<const uint4*>(x + static_cast<unsigned long long>(token) * k_stride);
    const uint4* w_row = reinterpret_cast<const uint4*>(weight + static_cast<unsigned long long>(n_out) * k);
    for (unsigned int kv = lane; kv < k_vec; kv += LANES) {
      acc = bf16x8_dot_step(acc, __ldg(x_row + kv), __ldg(w_row + kv));
    }
  }
  acc = warp_xor_sum(acc);
  if (threadIdx.x % 32u == 0u) {
    warp_partials[threadIdx.x / 32u] = acc;
  }
  __syncthreads();
  if (lane == 0u && n_out < n) {
    const float out = warp_pair_sum(warp_partials[local_out * 2u], warp_partials[local_out * 2u + 1u]);
    ba_gates_store(out, n_out, nv, vheads_per_group, a_log, dt_bias,
                   gate_out + static_cast<unsigned long long>(token) * gate_stride);
  }
}

// The twin: grid (M, 1, 1), one block per token; each thread accumulates GROUPS output groups
// per read of the row, so the row is read ceil(ceil(N / OUTS) / GROUPS) * OUTS times.
template <unsigned int BLOCK, unsigned int LANES, unsigned int GROUPS>
__global__ void __launch_bounds__(BLOCK, kBaGatesMinBlocksPerSm)
    dense_gemm_ba_gates_prefill_hopper(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ weight,
                                       const float* __restrict__ a_log, const float* __restrict__ dt_bias,
                                       float* __restrict__ gate_out, unsigned int m, unsigned int n, unsigned int k,
                                       unsigned int k_stride, unsigned int gate_stride, unsigned int nv,
                                       unsigned int vheads_per_group) {
  using Shape = BaGatesShape<BLOCK, LANES>;
  static_assert(GROUPS >= 1 && GROUPS <= 16, "GROUPS must be in [1, 16]");
  __shared__ float warp_partials[GROUPS * Shape::kWarps];
  const unsigned int token = blockIdx.x;
  const unsigned int local_out = threadIdx.x / LANES;
  const unsigned int lane = threadIdx.x % LANES;
  const unsigned int warp = threadIdx.x / 32u;
  const unsigned int k_vec = k / 8u;
  const unsigned int group_count = (n + Shape::kOuts - 1u) / Shape::kOuts;
  const uint4* x_row = reinterpret_cast<const uint4*>(x + static_cast<unsigned long long>(token) * k_stride);
  float* gate_row = gate_out + static_cast<unsigned long long>(token) * gate_stride;
  (void)m;

  for (unsigned int g0 = 0; g0 < group_count; g0 += GROUPS) {
    float acc[GROUPS];
    for (unsigned int g = 0; g < GROUPS; ++g) {
      acc[g] = 0.0f;
    }
    for (unsigned int kv = lane; kv < k_vec; kv += LANES) {
      const uint4 xv = __ldg(x_row + kv);
      for (unsigned int g = 0; g < GROUPS; ++g) {
        const unsigned int n_out = (g0 + g) * Shape::kOuts + local_out;
        if (n_out < n) {
          const uint4* w_row = reinterpret_cast<const uint4*>(weight + static_cast<unsigned long long>(n_out) * k);
          acc[g] = bf16x8_dot_step(acc[g], xv, __ldg(w_row + kv));
        }
      }
    }
    for (unsigned int g = 0; g < GROUPS; ++g) {
      acc[g] = warp_xor_sum(acc[g]);
      if (threadIdx.x % 32u == 0u) {
        warp_partials[g * Shape::kWarps + warp] = acc[g];
      }
    }
    __syncthreads();
    if (lane == 0u) {
      for (unsigned int g = 0; g < GROUPS; ++g) {
        const unsigned int n_out = (g0 + g) * Shape::kOuts + local_out;
        if (n_out < n) {
          const float* pair = warp_partials + g * Shape::kWarps + local_out * 2u;
          ba_gates_store(warp_pair_sum(pair[0], pair[1]), n_out, nv, vheads_per_group, a_log, dt_bias, gate_row);
        }
      }
    }
    // The next tile overwrites warp_partials.
    __syncthreads();
  }
}

}  // namespace kernels
}  // namespace metrale

// The shipped variants the host backend instantiates, one line per (kernel, block, lanes, groups,
// shape) a target file ships (src/host/builtin_kernel_registration.hpp defines the macro; NVRTC
// and the host JIT never see these lines).
#ifdef METRALE_HOST_KERNEL
METRALE_HOST_KERNEL("ssm_ba_gates", 256, 64, 0, 0, metrale::kernels::dense_gemm_ba_gates_prefill<256, 64>)
METRALE_HOST_KERNEL("ssm_ba_gates_hopper", 256, 64, 8, 0,
                    metrale::kernels::dense_gemm_ba_gates_prefill_hopper<256, 64, 8>)
#endif
