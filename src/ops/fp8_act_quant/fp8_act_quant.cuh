// fp8_act_quant.cuh: per-token-group FP8 (e4m3fn) activation quantisation, as the shared kernel
// per_token_group_quant_fp8 and its Hopper twin. Owned by the kernels area.
// Invariants:
// - a group of 128 elements is handled by a team of LANES lanes (16, 8 or 4; 16 / LANES 16-byte
//   vectors of 8 bf16 per lane), and its bytes are fixed by fp8_quant_group's per-element math
//   alone (the group's max is exact in any order), so both kernels write the same bytes at any
//   LANES;
// - a team with no group to handle skips its work and never joins a shuffle: the shuffle masks
//   name only the participating team;
// - token x row-stride products are 64-bit.
// Arguments (both kernels, in this order): x (bf16, rows of x_row_stride elements), q (e4m3fn
// [M][K]), scales (fp32, scale of group g of token t at t * scale_stride_m + g * scale_stride_g),
// m, k, x_row_stride, scale_stride_m, scale_stride_g, pow2_scale (non-zero: UE8M0 scales).
#pragma once

#include "metrale_arith.cuh"

namespace metrale {
namespace kernels {

template <unsigned int LANES, unsigned int GROUPS>
struct Fp8QuantShape {
  static_assert(LANES == 4 || LANES == 8 || LANES == 16, "a 128-element group is 4, 8 or 16 lanes");
  static_assert(GROUPS >= 1 && LANES * GROUPS <= 1024, "GROUPS must be >= 1 with LANES * GROUPS <= 1024");
  static constexpr unsigned int kThreads = LANES * GROUPS;
};

// Quantises group `group` of token `token` from the lane's vectors `v` (vector j of lane l holds
// elements 8 (j LANES + l) of the group, as fp8_quant_group loads them); called by the LANES
// lanes of one team. Apart from the loads so a kernel that computes the group's bf16 values
// itself (src/ops/silu_mul_fp8_quant/silu_mul_fp8_quant.cuh) writes the bytes this kernel would for them.
template <unsigned int LANES>
__device__ inline void fp8_quant_group_values(const uint4 (&v)[kFp8GroupSize / 8u / LANES],
                                              __nv_fp8_e4m3* __restrict__ q, float* __restrict__ scales,
                                              unsigned int token, unsigned int group, unsigned int lane, unsigned int k,
                                              unsigned int scale_stride_m, unsigned int scale_stride_g,
                                              bool pow2_scale) {
  constexpr unsigned int kVectors = kFp8GroupSize / 8u / LANES;
  const unsigned long long first = static_cast<unsigned long long>(group) * kFp8GroupSize + lane * 8u;
  float lane_max = bf16x8_abs_max(v[0]);
  METRALE_UNROLL
  for (unsigned int j = 1; j < kVectors; ++j) {
    lane_max = fmaxf(lane_max, bf16x8_abs_max(v[j]));
  }
  const float amax = team_max<LANES>(lane_max, team_mask<LANES>(threadIdx.x));
  const float scale = fp8_scale_for(amax, pow2_scale);
  __nv_fp8_e4m3* out = q + static_cast<unsigned long long>(token) * k + first;
  METRALE_UNROLL
  for (unsigned int j = 0; j < kVectors; ++j) {
    *reinterpret_cast<uint2*>(out + j * LANES * 8u) = fp8_quantize_x8(v[j], scale);
  }
  if (lane == 0u) {
    scales[static_cast<unsigned long long>(token) * scale_stride_m +
           static_cast<unsigned long long>(group) * scale_stride_g] = scale;
  }
}

// Quantises group `group` of token `token`; called by the LANES lanes of one team. Each lane
// holds 16 / LANES vectors of 8 bf16, vector j of lane l at element 8 (j LANES + l) of the group,
// so each load instruction of a team reads LANES x 16 contiguous bytes. All of a lane's loads are
// issued before any is used. Why fewer lanes: with one 16-byte load per thread the twin kept
// ~28 KiB per SM in flight and reached 73 % of the H200's copy bandwidth (memory-parallelism
// bound); 8 lanes x 2 vectors doubles the bytes in flight per thread with the same grid.
template <unsigned int LANES>
__device__ inline void fp8_quant_group(const __nv_bfloat16* __restrict__ x, __nv_fp8_e4m3* __restrict__ q,
                                       float* __restrict__ scales, unsigned int token, unsigned int group,
                                       unsigned int lane, unsigned int k, unsigned int x_row_stride,
                                       unsigned int scale_stride_m, unsigned int scale_stride_g, bool pow2_scale) {
  constexpr unsigned int kVectors = kFp8GroupSize / 8u / LANES;
  const unsigned long long first = static_cast<unsigned long long>(group) * kFp8GroupSize + lane * 8u;
  const __nv_bfloat16* row = x + static_cast<unsigned long long>(token) * x_row_stride;
  uint4 v[kVectors];
  METRALE_UNROLL
  for (unsigned int j = 0; j < kVectors; ++j) {
    v[j] = __ldg(reinterpret_cast<const uint4*>(row + first + j * LANES * 8u));
  }
  fp8_quant_group_values<LANES>(v, q, scales, token, group, lane, k, scale_stride_m, scale_stride_g, pow2_scale);
}

// The shared kernel: grid (M, K / 128 / GROUPS), no tail (the kernel catalog ships it at GROUPS = 1).
template <unsigned int LANES, unsigned int GROUPS>
__global__ void __launch_bounds__(LANES* GROUPS)
    per_token_group_quant_fp8(const __nv_bfloat16* __restrict__ x, __nv_fp8_e4m3* __restrict__ q,
                              float* __restrict__ scales, unsigned int m, unsigned int k, unsigned int x_row_stride,
                              unsigned int scale_stride_m, unsigned int scale_stride_g, unsigned int pow2_scale) {
  (void)Fp8QuantShape<LANES, GROUPS>::kThreads;
  (void)m;
  fp8_quant_group<LANES>(x, q, scales, blockIdx.x, blockIdx.y * GROUPS + threadIdx.x / LANES, threadIdx.x % LANES, k,
                         x_row_stride, scale_stride_m, scale_stride_g, pow2_scale != 0u);
}

// The twin: grid (M, ceil(K / 128 / GROUPS)); half-warps past the last group of the row idle.
template <unsigned int LANES, unsigned int GROUPS>
__global__ void __launch_bounds__(LANES* GROUPS)
    per_token_group_quant_fp8_hopper(const __nv_bfloat16* __restrict__ x, __nv_fp8_e4m3* __restrict__ q,
                                     float* __restrict__ scales, unsigned int m, unsigned int k,
                                     unsigned int x_row_stride, unsigned int scale_stride_m,
                                     unsigned int scale_stride_g, unsigned int pow2_scale) {
  (void)Fp8QuantShape<LANES, GROUPS>::kThreads;
  (void)m;
  const unsigned int group = blockIdx.y * GROUPS + threadIdx.x / LANES;
  if (group < k / kFp8GroupSize) {
    fp8_quant_group<LANES>(x, q, scales, blockIdx.x, group, threadIdx.x % LANES, k, x_row_stride, scale_stride_m,
                           scale_stride_g, pow2_scale != 0u);
  }
}

}  // namespace kernels
}  // namespace metrale

// The shipped variants the host backend instantiates, one line per (kernel, block, lanes, groups,
// shape) a target file ships (src/host/builtin_kernel_registration.hpp defines the macro; NVRTC
// and the host JIT never see these lines).
#ifdef METRALE_HOST_KERNEL
METRALE_HOST_KERNEL("fp8_act_quant", 0, 16, 1, 0, metrale::kernels::per_token_group_quant_fp8<16, 1>)
METRALE_HOST_KERNEL("fp8_act_quant_hopper", 0, 16, 8, 0, metrale::kernels::per_token_group_quant_fp8_hopper<16, 8>)
METRALE_HOST_KERNEL("fp8_act_quant_hopper", 0, 4, 8, 0, metrale::kernels::per_token_group_quant_fp8_hopper<4, 8>)
#endif
