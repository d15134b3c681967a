// silu_mul_fp8_quant.cuh: per-token-group FP8 (e4m3fn) quantisation of h = bf16(silu(gate) * up),
// the input of an MLP's down projection: the parent's first step silu_mul_bf16 (h into a bf16
// scratch, which fp8_act_quant.cuh's per_token_group_quant_fp8 then quantises) and the fused twin
// silu_mul_per_token_group_quant_fp8. Owned by the kernels area.
// Invariants:
// - h is computed by silu_mul_bf16_bits alone, in fp32 with silu(g) = g / (1 + expf(-g)) and
//   every operation an explicit _rn intrinsic (no contraction), then rounded to bf16 once; both
//   kernels call it, so on one backend the twin's h is the parent's scratch bit for bit (expf
//   is the backend's: CUDA's on a device, the C library's on the host);
// - the twin quantises h through fp8_quant_group_values, the shared kernel's own group code, so
//   its codes and scales are the parent's bytes at any LANES;
// - a team with no group to handle skips its work and never joins a shuffle;
// - token x row-stride products are 64-bit.
// Arguments, silu_mul_bf16: gate, up (bf16 rows of gate_row_stride / up_row_stride elements, the
// first k used), h (bf16 [m][k]), m, k, gate_row_stride, up_row_stride. The twin: gate, up, q
// (e4m3fn [m][k]), scales (fp32, group g of token t at t * scale_stride_m + g * scale_stride_g),
// m, k, gate_row_stride, up_row_stride, scale_stride_m, scale_stride_g, pow2_scale (non-zero:
// UE8M0 scales). Both halves of one [M][2K] row: gate = row, up = row + K, both strides 2K.
#pragma once

#include "fp8_act_quant.cuh"

namespace metrale {
namespace kernels {

// bf16 bits of `value`, rounded to nearest even; a NaN stays a NaN (quieted, sign and top payload
// bits kept), an overflow rounds to the infinity of its sign.
__device__ inline unsigned int bf16_bits_from_float(float value) {
  const unsigned int bits = __float_as_uint(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) {
    return (bits >> 16) | 0x0040u;
  }
  return (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
}

// bf16(silu(g) * u) for two bf16 inputs in float, silu(g) = g / (1 + exp(-g)).
__device__ inline unsigned int silu_mul_bf16_bits(float g, float u) {
  return bf16_bits_from_float(__fmul_rn(__fdiv_rn(g, __fadd_rn(1.0f, expf(-g))), u));
}

// The two bf16 of h from the two bf16 of gate and up in one word each, the low element low.
__device__ inline unsigned int silu_mul_pair(unsigned int gate, unsigned int up) {
  return silu_mul_bf16_bits(bf16_low_to_float(gate), bf16_low_to_float(up)) |
         (silu_mul_bf16_bits(bf16_high_to_float(gate), bf16_high_to_float(up)) << 16);
}

// 8 elements of h from 8 of gate and 8 of up, in element order.
__device__ inline uint4 silu_mul_x8(uint4 gate, uint4 up) {
  uint4 h;
  h.x = silu_mul_pair(gate.x, up.x);
  h.y = silu_mul_pair(gate.y, up.y);
  h.z = silu_mul_pair(gate.z, up.z);
  h.w = silu_mul_pair(gate.w, up.w);
  return h;
}

// The parent's first step: grid (M, ceil(K / 8 / BLOCK)), one 16-byte vector of 8 elements per
// thread; threads past the row's last vector idle.
template <unsigned int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    silu_mul_bf16(const __nv_bfloat16* __restrict__ gate, const __nv_bfloat16* __restrict__ up,
                  __nv_bfloat16* __restrict__ h, unsigned int m, unsigned int k, unsigned int gate_row_stride,
                  unsigned int up_row_stride) {
  static_assert(BLOCK >= 32u && BLOCK <= 1024u && BLOCK % 32u == 0u, "BLOCK must be whole warps, at most 1024");
  (void)m;
  const unsigned int vector = blockIdx.y * BLOCK + threadIdx.x;
  if (vector >= k / 8u) {
    return;
  }
  const unsigned long long token = blockIdx.x;
  const unsigned long long column = static_cast<unsigned long long>(vector) * 8u;
  const uint4 g = __ldg(reinterpret_cast<const uint4*>(gate + token * gate_row_stride + column));
  const uint4 u = __ldg(reinterpret_cast<const uint4*>(up + token * up_row_stride + column));
  *reinterpret_cast<uint4*>(h + token * k + column) = silu_mul_x8(g, u);
}

// The twin: grid (M, ceil(K / 128 / GROUPS)), a team of LANES lanes per 128-element group as the
// FP8 twin (fp8_quant_group's layout: vector j of lane l at element 8 (j LANES + l)); every load
// of gate and up is issued before any is used; teams past the row's last group idle.
template <unsigned int LANES, unsigned int GROUPS>
__global__ void __launch_bounds__(LANES* GROUPS)
    silu_mul_per_token_group_quant_fp8(const __nv_bfloat16* __restrict__ gate, const __nv_bfloat16* __restrict__ up,
                                       __nv_fp8_e4m3* __restrict__ q, float* __restrict__ scales, unsigned int m,
                                       unsigned int k, unsigned int gate_row_stride, unsigned int up_row_stride,
                                       unsigned int scale_stride_m, unsigned int scale_stride_g,
                                       unsigned int pow2_scale) {
  (void)Fp8QuantShape<LANES, GROUPS>::kThreads;
  (void)m;
  constexpr unsigned int kVectors = kFp8GroupSize / 8u / LANES;
  const unsigned int group = blockIdx.y * GROUPS + threadIdx.x / LANES;
  if (group >= k / kFp8GroupSize) {
    return;
  }
  const unsigned int token = blockIdx.x;
  const unsigned int lane = threadIdx.x % LANES;
  const unsigned long long first = static_cast<unsigned long long>(group) * kFp8GroupSize + lane * 8u;
  const __nv_bfloat16* gate_row = gate + static_cast<unsigned long long>(token) * gate_row_stride + first;
  const __nv_bfloat16* up_row = up + static_cast<unsigned long long>(token) * up_row_stride + first;
  uint4 g[kVectors];
  uint4 u[kVectors];
  METRALE_UNROLL
  for (unsigned int j = 0; j < kVectors; ++j) {
    g[j] = __ldg(reinterpret_cast<const uint4*>(gate_row + j * LANES * 8u));
    u[j] = __ldg(reinterpret_cast<const uint4*>(up_row + j * LANES * 8u));
  }
  uint4 h[kVectors];
  METRALE_UNROLL
  for (unsigned int j = 0; j < kVectors; ++j) {
    h[j] = silu_mul_x8(g[j], u[j]);
  }
  fp8_quant_group_values<LANES>(h, q, scales, token, group, lane, k, scale_stride_m, scale_stride_g, pow2_scale != 0u);
}

}  // namespace kernels
}  // namespace metrale

// The shipped variants the host backend instantiates, one line per (kernel, block, lanes, groups,
// shape) a target file ships (src/host/builtin_kernel_registration.hpp defines the macro; NVRTC
// and the host JIT never see these lines).
#ifdef METRALE_HOST_KERNEL
METRALE_HOST_KERNEL("silu_mul_bf16", 256, 0, 0, 0, metrale::kernels::silu_mul_bf16<256>)
METRALE_HOST_KERNEL("silu_mul_fp8_quant_fused", 0, 4, 8, 0, metrale::kernels::silu_mul_per_token_group_quant_fp8<4, 8>)
#endif
