// fused_add_rmsnorm.cuh: fused residual-add + RMSNorm (vLLM's fused_add_rms_norm), bf16 in and
// out, fp32 accumulation, with an optional per-token-group FP8 (e4m3fn) quantisation of y: the
// parent fused_add_rmsnorm_bf16 (plain 2-byte loads, any hidden size and row stride) and its
// vectorised twin fused_add_rmsnorm_bf16_vec (16-byte loads of 8 bf16). One CTA per row.
// Math, per row: z = bf16(x + residual) (written to residual_out), inv = rsqrt(sum(z^2) / H +
// eps), y = bf16(z * inv * weight) (one rounding of the fp32 product); q, scales = fp8_quant(y)
// per 128-element group through fp8_act_quant.cuh's fp8_quant_group_values.
// Invariants (why the twin's bytes are the parent's, by construction):
// - the row is cut into chunks of 8 elements; thread t owns chunks t, t + BLOCK, t + 2 BLOCK,
//   ... in both kernels, and sums the squares of its chunks' z in element order with one
//   __fmaf_rn each (rmsnorm_square_step): the parent element by element, the twin unpacking its
//   16-byte vector in the same order (rmsnorm_square_x8), so each thread's partial sum is the
//   same float in both;
// - the partials are reduced by rmsnorm_block_sum alone (warp_xor_sum in each warp, then warp 0
//   sums the warps' totals in the same butterfly, zeros past the last warp), so at one BLOCK the
//   total is the same float in both (the catalog declares the twin same_shape: its block is the
//   parent's); every scalar step (add, inverse rms, output) is one shared function;
// - the FP8 step is fed the same 8 y per chunk in both kernels; chunk c is lane c % 16 of the
//   16-lane team of group c / 16, which is thread t's team (BLOCK is whole warps), and with
//   H % 128 == 0 a team's chunks all exist or all do not, so no team shuffles half-empty;
// - residual and residual_out may be one buffer (in place): neither is __restrict__, each element
//   is read once before the same thread overwrites it, and pass 2 reads z back from residual_out
//   (the thread's own writes);
// - token x row-stride products are 64-bit.
// Arguments (both kernels, in this order): x, residual (bf16 rows of x_row_stride /
// residual_row_stride elements, the first `hidden` used), weight (bf16 [hidden]), y (bf16
// [m][hidden]), residual_out (bf16, rows of residual_row_stride), q (e4m3fn [m][hidden] or null:
// no FP8 output), scales (fp32 [m][hidden / 128]), m, hidden, x_row_stride, residual_row_stride,
// eps, pow2_scale (non-zero: UE8M0 scales). The twin needs hidden and both strides multiples of 8
// and every tensor 16-byte aligned (the op's guard).
#pragma once

#include "silu_mul_fp8_quant.cuh"

namespace metrale {
namespace kernels {

// The 16-lane team of fp8_quant_group_values: one 8-element chunk per lane, 128 per group.
constexpr unsigned int kRmsnormQuantLanes = 16u;

// bf16 bits of bf16(x + r) from two bf16 bit patterns (low 16 bits used).
__device__ inline unsigned int rmsnorm_add_bits(unsigned int x, unsigned int r) {
  return bf16_bits_from_float(__fadd_rn(bf16_low_to_float(x & 0xffffu), bf16_low_to_float(r & 0xffffu)));
}

// One element's square added to a thread's partial sum.
__device__ inline float rmsnorm_square_step(float partial, unsigned int z) {
  const float v = bf16_low_to_float(z & 0xffffu);
  return __fmaf_rn(v, v, partial);
}

// 1 / sqrt(total / hidden + eps).
__device__ inline float rmsnorm_inv_rms(float total, unsigned int hidden, float eps) {
  return rsqrtf(__fadd_rn(__fdiv_rn(total, static_cast<float>(hidden)), eps));
}

// bf16 bits of bf16(z * inv * w).
__device__ inline unsigned int rmsnorm_out_bits(unsigned int z, float inv, unsigned int w) {
  return bf16_bits_from_float(
      __fmul_rn(__fmul_rn(bf16_low_to_float(z & 0xffffu), inv), bf16_low_to_float(w & 0xffffu)));
}

// A 16-byte vector from its four words (no toolkit make_uint4: the host prelude has none).
__device__ inline uint4 rmsnorm_x4(unsigned int a, unsigned int b, unsigned int c, unsigned int d) {
  uint4 v;
  v.x = a;
  v.y = b;
  v.z = c;
  v.w = d;
  return v;
}

// Two packed bf16 at a time, the low element first (element order within a 16-byte vector).
__device__ inline unsigned int rmsnorm_add_pair(unsigned int x, unsigned int r) {
  return rmsnorm_add_bits(x, r) | (rmsnorm_add_bits(x >> 16, r >> 16) << 16);
}
__device__ inline float rmsnorm_square_pair(float partial, unsigned int z) {
  return rmsnorm_square_step(rmsnorm_square_step(partial, z), z >> 16);
}
__device__ inline unsigned int rmsnorm_out_pair(unsigned int z, float inv, unsigned int w) {
  return rmsnorm_out_bits(z, inv, w) | (rmsnorm_out_bits(z >> 16, inv, w >> 16) << 16);
}
__device__ inline float rmsnorm_square_x8(float partial, uint4 z) {
  return rmsnorm_square_pair(rmsnorm_square_pair(rmsnorm_square_pair(rmsnorm_square_pair(partial, z.x), z.y), z.z),
                             z.w);
}

// The CTA's total of every thread's partial: warp_xor_sum per warp, the warps' sums into
// `sums[warp]`, then warp 0 sums them in the same butterfly and leaves the total in
// `sums[BLOCK / 32]` for every thread. `sums` holds BLOCK / 32 + 1 floats of shared memory.
template <unsigned int BLOCK>
__device__ inline float rmsnorm_block_sum(float partial, float* sums) {
  constexpr unsigned int kWarps = BLOCK / 32u;
  const unsigned int lane = threadIdx.x % 32u;
  const unsigned int warp = threadIdx.x / 32u;
  const float warp_total = warp_xor_sum(partial);
  if (lane == 0u) {
    sums[warp] = warp_total;
  }
  __syncthreads();
  if (warp == 0u) {
    const float total = warp_xor_sum(lane < kWarps ? sums[lane] : 0.0f);
    if (lane == 0u) {
      sums[kWarps] = total;
    }
  }
  __syncthreads();
  return sums[kWarps];
}

// The FP8 step of chunk `chunk` (8 y values in `y8`); every lane of its team calls it.
__device__ inline void rmsnorm_quant_chunk(uint4 y8, unsigned int chunk, __nv_fp8_e4m3* __restrict__ q,
                                           float* __restrict__ scales, unsigned int token, unsigned int hidden,
                                           unsigned int pow2_scale) {
  const uint4 v[1] = {y8};
  fp8_quant_group_values<kRmsnormQuantLanes>(v, q, scales, token, chunk / kRmsnormQuantLanes,
                                             chunk % kRmsnormQuantLanes, hidden, hidden / kFp8GroupSize, 1u,
                                             pow2_scale != 0u);
}

template <unsigned int BLOCK>
struct RmsnormShape {
  static_assert(BLOCK >= 32u && BLOCK <= 1024u && BLOCK % 32u == 0u, "BLOCK must be whole warps, at most 1024");
  static constexpr unsigned int kSums = BLOCK / 32u + 1u;
};

// The parent: grid (M), BLOCK threads; element loads of 2 bytes, a chunk cut short at the row's end.
template <unsigned int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    fused_add_rmsnorm_bf16(const __nv_bfloat16* x, const __nv_bfloat16* residual,
                           const __nv_bfloat16* __restrict__ weight, __nv_bfloat16* __restrict__ y,
                           __nv_bfloat16* residual_out, __nv_fp8_e4m3* __restrict__ q, float* __restrict__ scales,
                           unsigned int m, unsigned int hidden, unsigned int x_row_stride,
                           unsigned int residual_row_stride, float eps, unsigned int pow2_scale) {
  __shared__ float sums[RmsnormShape<BLOCK>::kSums];
  (void)m;
  const unsigned long long token = blockIdx.x;
  const unsigned short* x_row = reinterpret_cast<const unsigned short*>(x) + token * x_row_stride;
  const unsigned short* r_row = reinterpret_cast<const unsigned short*>(residual) + token * residual_row_stride;
  unsigned short* z_row = reinterpret_cast<unsigned short*>(residual_out) + token * residual_row_stride;
  unsigned short* y_row = reinterpret_cast<unsigned short*>(y) + token * hidden;
  const unsigned short* w = reinterpret_cast<const unsigned short*>(weight);
  float partial = 0.0f;
  for (unsigned int chunk = threadIdx.x; chunk * 8u < hidden; chunk += BLOCK) {
    const unsigned int end = min(chunk * 8u + 8u, hidden);
    for (unsigned int e = chunk * 8u; e < end; ++e) {
      const unsigned int z = rmsnorm_add_bits(x_row[e], r_row[e]);
      z_row[e] = static_cast<unsigned short>(z);
      partial = rmsnorm_square_step(partial, z);
    }
  }
  const float inv = rmsnorm_inv_rms(rmsnorm_block_sum<BLOCK>(partial, sums), hidden, eps);
  for (unsigned int chunk = threadIdx.x; chunk * 8u < hidden; chunk += BLOCK) {
    const unsigned int end = min(chunk * 8u + 8u, hidden);
    unsigned int packed[4] = {0u, 0u, 0u, 0u};
    for (unsigned int e = chunk * 8u; e < end; ++e) {
      const unsigned int out = rmsnorm_out_bits(z_row[e], inv, w[e]);
      y_row[e] = static_cast<unsigned short>(out);
      packed[(e % 8u) / 2u] |= out << (16u * (e % 2u));
    }
    if (q != nullptr) {
      rmsnorm_quant_chunk(rmsnorm_x4(packed[0], packed[1], packed[2], packed[3]), chunk, q, scales,
                          static_cast<unsigned int>(token), hidden, pow2_scale);
    }
  }
}

// The twin: grid (M), BLOCK threads (the parent's); one 16-byte load of 8 elements per chunk.
template <unsigned int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    fused_add_rmsnorm_bf16_vec(const __nv_bfloat16* x, const __nv_bfloat16* residual,
                               const __nv_bfloat16* __restrict__ weight, __nv_bfloat16* __restrict__ y,
                               __nv_bfloat16* residual_out, __nv_fp8_e4m3* __restrict__ q, float* __restrict__ scales,
                               unsigned int m, unsigned int hidden, unsigned int x_row_stride,
                               unsigned int residual_row_stride, float eps, unsigned int pow2_scale) {
  __shared__ float sums[RmsnormShape<BLOCK>::kSums];
  (void)m;
  const unsigned long long token = blockIdx.x;
  const unsigned int vectors = hidden / 8u;
  const uint4* x_row = reinterpret_cast<const uint4*>(x + token * x_row_stride);
  const uint4* r_row = reinterpret_cast<const uint4*>(residual + token * residual_row_stride);
  uint4* z_row = reinterpret_cast<uint4*>(residual_out + token * residual_row_stride);
  uint4* y_row = reinterpret_cast<uint4*>(y + token * hidden);
  const uint4* w = reinterpret_cast<const uint4*>(weight);
  float partial = 0.0f;
  for (unsigned int chunk = threadIdx.x; chunk < vectors; chunk += BLOCK) {
    const uint4 xv = x_row[chunk];
    const uint4 rv = r_row[chunk];
    const uint4 z = rmsnorm_x4(rmsnorm_add_pair(xv.x, rv.x), rmsnorm_add_pair(xv.y, rv.y), rmsnorm_add_pair(xv.z, rv.z),
                               rmsnorm_add_pair(xv.w, rv.w));
    z_row[chunk] = z;
    partial = rmsnorm_square_x8(partial, z);
  }
  const float inv = rmsnorm_inv_rms(rmsnorm_block_sum<BLOCK>(partial, sums), hidden, eps);
  for (unsigned int chunk = threadIdx.x; chunk < vectors; chunk += BLOCK) {
    const uint4 z = z_row[chunk];
    const uint4 wv = __ldg(w + chunk);
    const uint4 out = rmsnorm_x4(rmsnorm_out_pair(z.x, inv, wv.x), rmsnorm_out_pair(z.y, inv, wv.y),
                                 rmsnorm_out_pair(z.z, inv, wv.z), rmsnorm_out_pair(z.w, inv, wv.w));
    y_row[chunk] = out;
    if (q != nullptr) {
      rmsnorm_quant_chunk(out, chunk, q, scales, static_cast<unsigned int>(token), hidden, pow2_scale);
    }
  }
}

}  // namespace kernels
}  // namespace metrale

// The shipped variants the host backend instantiates, one line per (kernel, block, lanes, groups,
// shape) a target file ships (src/host/builtin_kernel_registration.hpp defines the macro; NVRTC
// and the host JIT never see these lines).
#ifdef METRALE_HOST_KERNEL
METRALE_HOST_KERNEL("fused_add_rmsnorm", 128, 0, 0, 0, metrale::kernels::fused_add_rmsnorm_bf16<128>)
METRALE_HOST_KERNEL("fused_add_rmsnorm_vec", 128, 0, 0, 0, metrale::kernels::fused_add_rmsnorm_bf16_vec<128>)
#endif
