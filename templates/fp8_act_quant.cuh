// fp8_act_quant.cuh: per-token-group FP8 (e4m3fn) activation quantisation, as the shared kernel
// per_token_group_quant_fp8 and its Hopper twin. Owned by the kernels area.
// Invariants:
// - a group of 128 elements is handled by LANES = 16 lanes of one half-warp, one 16-byte vector
//   (8 bf16) per lane, and its bytes are fixed by fp8_quant_group alone, so both kernels write
//   the same bytes;
// - a half-warp with no group to handle skips its work and never joins a shuffle: the shuffle
//   masks name only the participating half-warp;
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
  static_assert(LANES == 16, "a 128-element group is 16 lanes x 8 bf16");
  static_assert(GROUPS >= 1 && LANES * GROUPS <= 1024, "GROUPS must be >= 1 with LANES * GROUPS <= 1024");
  static constexpr unsigned int kThreads = LANES * GROUPS;
};

// Quantises group `group` of token `token`; called by the 16 lanes of one half-warp.
__device__ inline void fp8_quant_group(const __nv_bfloat16* __restrict__ x, __nv_fp8_e4m3* __restrict__ q,
                                       float* __restrict__ scales, unsigned int token, unsigned int group,
                                       unsigned int lane, unsigned int k, unsigned int x_row_stride,
                                       unsigned int scale_stride_m, unsigned int scale_stride_g, bool pow2_scale) {
  const unsigned long long element = static_cast<unsigned long long>(group) * kFp8GroupSize + lane * 8u;
  const uint4 v =
      __ldg(reinterpret_cast<const uint4*>(x + static_cast<unsigned long long>(token) * x_row_stride + element));
  const float amax = half_warp_max(bf16x8_abs_max(v), half_warp_mask(threadIdx.x));
  const float scale = fp8_scale_for(amax, pow2_scale);
  *reinterpret_cast<uint2*>(q + static_cast<unsigned long long>(token) * k + element) = fp8_quantize_x8(v, scale);
  if (lane == 0u) {
    scales[static_cast<unsigned long long>(token) * scale_stride_m +
           static_cast<unsigned long long>(group) * scale_stride_g] = scale;
  }
}

// The shared kernel: grid (M, K / 128 / GROUPS), no tail (the kernel catalog ships it at GROUPS = 1).
template <unsigned int LANES, unsigned int GROUPS>
__global__ void __launch_bounds__(LANES* GROUPS)
    per_token_group_quant_fp8(const __nv_bfloat16* __restrict__ x, __nv_fp8_e4m3* __restrict__ q,
                              float* __restrict__ scales, unsigned int m, unsigned int k, unsigned int x_row_stride,
                              unsigned int scale_stride_m, unsigned int scale_stride_g, unsigned int pow2_scale) {
  (void)Fp8QuantShape<LANES, GROUPS>::kThreads;
  (void)m;
  fp8_quant_group(x, q, scales, blockIdx.x, blockIdx.y * GROUPS + threadIdx.x / LANES, threadIdx.x % LANES, k,
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
    fp8_quant_group(x, q, scales, blockIdx.x, group, threadIdx.x % LANES, k, x_row_stride, scale_stride_m,
                    scale_stride_g, pow2_scale != 0u);
  }
}

}  // namespace kernels
}  // namespace metrale
