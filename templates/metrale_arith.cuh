// metrale_arith.cuh: everything that fixes the kernels' arithmetic order, in one place, so a
// parent kernel and its twin cannot drift apart. Owned by the kernels area.
// Invariants:
// - bf16 -> float is exact (bit shift), every product-accumulate is an explicit __fmaf_rn in
//   element order, so the result does not depend on the compiler's contraction choices;
// - the warp sum is the xor butterfly 16, 8, 4, 2, 1 and an output is warp_even + warp_odd;
// - the fp8 scale and e4m3 conversion are the only definitions the fp8 kernels use.
// Plain CUDA C++ only: compiled by NVRTC and, after the host prelude, by the host compiler.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp8.h>

namespace metrale {
namespace kernels {

// Every lane of a warp: the shuffles below name the whole warp.
constexpr unsigned int kFullWarpMask = 0xffffffffu;

// bf16 is the top half of a float, so both conversions below are exact.
__device__ inline float bf16_low_to_float(unsigned int packed) { return __uint_as_float(packed << 16); }
__device__ inline float bf16_high_to_float(unsigned int packed) { return __uint_as_float(packed & 0xffff0000u); }

// One 16-byte step of a bf16 dot product: 8 (x, w) pairs, accumulated in element order.
__device__ inline float bf16x8_dot_step(float acc, uint4 x, uint4 w) {
  acc = __fmaf_rn(bf16_low_to_float(x.x), bf16_low_to_float(w.x), acc);
  acc = __fmaf_rn(bf16_high_to_float(x.x), bf16_high_to_float(w.x), acc);
  acc = __fmaf_rn(bf16_low_to_float(x.y), bf16_low_to_float(w.y), acc);
  acc = __fmaf_rn(bf16_high_to_float(x.y), bf16_high_to_float(w.y), acc);
  acc = __fmaf_rn(bf16_low_to_float(x.z), bf16_low_to_float(w.z), acc);
  acc = __fmaf_rn(bf16_high_to_float(x.z), bf16_high_to_float(w.z), acc);
  acc = __fmaf_rn(bf16_low_to_float(x.w), bf16_low_to_float(w.w), acc);
  acc = __fmaf_rn(bf16_high_to_float(x.w), bf16_high_to_float(w.w), acc);
  return acc;
}

// Sum over the 32 lanes of a warp, the xor butterfly 16, 8, 4, 2, 1; every lane gets the sum.
// Every lane of the warp must call it.
__device__ inline float warp_xor_sum(float value) {
  value += __shfl_xor_sync(kFullWarpMask, value, 16);
  value += __shfl_xor_sync(kFullWarpMask, value, 8);
  value += __shfl_xor_sync(kFullWarpMask, value, 4);
  value += __shfl_xor_sync(kFullWarpMask, value, 2);
  value += __shfl_xor_sync(kFullWarpMask, value, 1);
  return value;
}

// Max over the 16 lanes of one half-warp (width-16 xor shuffles); `half_mask` names exactly the
// calling half-warp, so the other half may be idle. Exact in any order.
__device__ inline float half_warp_max(float value, unsigned int half_mask) {
  value = fmaxf(value, __shfl_xor_sync(half_mask, value, 8, 16));
  value = fmaxf(value, __shfl_xor_sync(half_mask, value, 4, 16));
  value = fmaxf(value, __shfl_xor_sync(half_mask, value, 2, 16));
  value = fmaxf(value, __shfl_xor_sync(half_mask, value, 1, 16));
  return value;
}

// The shuffle mask of the half-warp that holds thread `thread_in_block`.
__device__ inline unsigned int half_warp_mask(unsigned int thread_in_block) {
  return 0x0000ffffu << (16u * ((thread_in_block / 16u) % 2u));
}

// A 64-lane output is the sum of its two warps' partials, even warp first.
__device__ inline float warp_pair_sum(float warp_even, float warp_odd) { return warp_even + warp_odd; }

// --- Gated DeltaNet gate math -----------------------------------------------------------

__device__ inline float gate_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

__device__ inline float gate_softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); }

// gate = -exp(A_log) * softplus(acc + dt_bias)
__device__ inline float gate_decay(float acc, float a_log, float dt_bias) {
  return -expf(a_log) * gate_softplus(acc + dt_bias);
}

// --- FP8 (e4m3fn) group quantisation ------------------------------------------------------

// Elements per quantisation group and the largest finite e4m3fn value.
constexpr unsigned int kFp8GroupSize = 128;
constexpr float kFp8E4m3Max = 448.0f;
// The floor on a group's amax, so an all-zero group gets a finite scale.
constexpr float kFp8AmaxFloor = 1e-10f;

// s = amax / 448, amax floored at 1e-10.
__device__ inline float fp8_group_scale(float amax) { return fmaxf(amax, kFp8AmaxFloor) / kFp8E4m3Max; }

// The UE8M0 variant: the smallest power of two >= amax / 448, read off the float's bits (the
// quotient is a positive normal float for every amax >= 1e-10, so no subnormal case arises).
__device__ inline float fp8_group_scale_pow2(float amax) {
  const unsigned int bits = __float_as_uint(fp8_group_scale(amax));
  const unsigned int exponent = (bits >> 23) + ((bits & 0x007fffffu) != 0u ? 1u : 0u);
  return __uint_as_float(exponent << 23);
}

__device__ inline float fp8_scale_for(float amax, bool pow2_scale) {
  return pow2_scale ? fp8_group_scale_pow2(amax) : fp8_group_scale(amax);
}

// e4m3fn code of v / scale: round to nearest even, saturate to +-448.
__device__ inline unsigned int fp8_e4m3_code(float v, float scale) {
  return static_cast<unsigned int>(__nv_cvt_float_to_fp8(v / scale, __NV_SATFINITE, __NV_E4M3));
}

// Largest |x| over the 8 bf16 of a 16-byte vector.
__device__ inline float bf16x8_abs_max(uint4 v) {
  float m = fabsf(bf16_low_to_float(v.x));
  m = fmaxf(m, fabsf(bf16_high_to_float(v.x)));
  m = fmaxf(m, fabsf(bf16_low_to_float(v.y)));
  m = fmaxf(m, fabsf(bf16_high_to_float(v.y)));
  m = fmaxf(m, fabsf(bf16_low_to_float(v.z)));
  m = fmaxf(m, fabsf(bf16_high_to_float(v.z)));
  m = fmaxf(m, fabsf(bf16_low_to_float(v.w)));
  m = fmaxf(m, fabsf(bf16_high_to_float(v.w)));
  return m;
}

// Two bf16 of one word -> two e4m3 codes, the low element in the low byte.
__device__ inline unsigned int fp8_pack_pair(unsigned int packed, float scale) {
  return fp8_e4m3_code(bf16_low_to_float(packed), scale) | (fp8_e4m3_code(bf16_high_to_float(packed), scale) << 8);
}

// 8 bf16 -> 8 e4m3 codes in element order (byte i of the result = element i).
__device__ inline uint2 fp8_quantize_x8(uint4 v, float scale) {
  uint2 out;
  out.x = fp8_pack_pair(v.x, scale) | (fp8_pack_pair(v.y, scale) << 16);
  out.y = fp8_pack_pair(v.z, scale) | (fp8_pack_pair(v.w, scale) << 16);
  return out;
}

}  // namespace kernels
}  // namespace metrale
