// metrale_types.cuh: the bf16 and e4m3 storage types and the one float -> e4m3 conversion the
// library's kernels use, so they compile without the CUDA toolkit's headers (NVRTC is called
// without the toolkit's include directory for them). Owned by the kernels area.
// Invariants:
// - __nv_bfloat16 and __nv_fp8_e4m3 are storage only (the kernels move their bits and convert
//   through the bit operations of metrale_arith.cuh); they keep the toolkit's names at global
//   scope, so the kernels' lowered (mangled) names are the ones the toolkit's types gave. A unit
//   that includes cuda_bf16.h / cuda_fp8.h before this file keeps the toolkit's types (guarded by
//   the macros those headers define); including them after this file is not supported.
// - e4m3_from_float is __nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3) bit for bit: round to
//   nearest even, saturate to +-448 (infinities too), a NaN of either sign is 0x7f, a zero or a
//   value that rounds to zero keeps its sign. sm_89 and newer use the PTX conversion the toolkit
//   uses there; everything else (older archs, the host backend) the exact integer path below,
//   which kernels_e4m3_conversion_test compares with src/ref's independent encoder.
// - Nothing else is needed from the toolkit: NVRTC declares the vector types (uint2, uint4),
//   __ldg, the float intrinsics and the math functions itself; the host prelude supplies them
//   on the host.
// Plain CUDA C++: compiled by NVRTC and, after the host prelude, by the host compiler.
#pragma once

// The device pass (NVRTC's, nvcc's), where inline PTX runs: __CUDA_ARCH__ without the host prelude.
// The host backend's JIT defines __CUDA_ARCH__ over an engine's source as NVRTC does
// (src/host/README.md), so these templates ask for the pass, not for the macro alone.
#if defined(__CUDA_ARCH__) && !defined(METRALE_HOST_BACKEND)
#define METRALE_DEVICE_PASS 1
#endif

// The toolkit's names, kept so lowered names do not change. NOLINTBEGIN(bugprone-reserved-identifier)
#if !defined(__CUDA_BF16_TYPES_EXIST__)
struct alignas(2) __nv_bfloat16 {
  unsigned short __x;
};
#endif
#if !defined(__CUDA_FP8_TYPES_EXIST__)
struct alignas(1) __nv_fp8_e4m3 {
  unsigned char __x;
};
#endif
// NOLINTEND(bugprone-reserved-identifier)

namespace metrale {
namespace kernels {

// Drops the low `shift` bits of `value` (1 <= shift <= 31), rounding to nearest, ties to even.
__device__ inline unsigned int round_shift_right_even(unsigned int value, unsigned int shift) {
  const unsigned int kept = value >> shift;
  const unsigned int rest = value & ((1u << shift) - 1u);
  const unsigned int half = 1u << (shift - 1u);
  return kept + ((rest > half || (rest == half && (kept & 1u) != 0u)) ? 1u : 0u);
}

// The software path: integer operations on the float's bits only.
__device__ inline unsigned int e4m3_from_float_bits(unsigned int bits) {
  // e4m3fn: 1 sign, 4 exponent (bias 7), 3 mantissa bits; 0x7e is +448, 0x7f NaN. (Local, so
  // NVRTC emits no namespace-scope globals for them.)
  constexpr unsigned int kE4m3MaxCode = 0x7eu;
  constexpr unsigned int kE4m3NanCode = 0x7fu;
  const unsigned int sign = (bits >> 24) & 0x80u;
  const unsigned int magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) {
    return kE4m3NanCode;
  }
  if (magnitude >= 0x43e00000u) {  // |v| >= 448, infinity included
    return sign | kE4m3MaxCode;
  }
  const unsigned int exponent = magnitude >> 23;  // float-biased (127)
  if (exponent >= 121u) {
    // |v| >= 2^-6, the smallest normal e4m3: re-bias the exponent (127 -> 7) and round the
    // mantissa to 3 bits; a carry out of the mantissa moves into the exponent, which is the next
    // code. |v| < 448 rounds to at most 448, so no saturation is needed here.
    return sign | round_shift_right_even(((exponent - 120u) << 23) | (magnitude & 0x007fffffu), 20u);
  }
  // Subnormal e4m3: units of 2^-9. v = significand 2^(exponent - 150), so units = significand
  // 2^(exponent - 141); 24 significant bits shifted by 25 or more are below half a unit (a float
  // subnormal, exponent 0, is far below too).
  const unsigned int shift = 141u - exponent;
  if (exponent == 0u || shift > 24u) {
    return sign;
  }
  return sign | round_shift_right_even((magnitude & 0x007fffffu) | 0x00800000u, shift);
}

// e4m3fn code of v (in the low byte): round to nearest even, saturate to +-448.
__device__ inline unsigned int e4m3_from_float(float v) {
#if defined(METRALE_DEVICE_PASS) && (__CUDA_ARCH__ >= 890)
  unsigned short pair;
  // Converts (0, v) to two codes, v's in the low byte, as the toolkit's __nv_cvt_float_to_fp8.
  asm("{cvt.rn.satfinite.e4m3x2.f32 %0, %2, %1;}\n" : "=h"(pair) : "f"(v), "f"(0.0f));
  return static_cast<unsigned int>(pair) & 0xffu;
#else
  return e4m3_from_float_bits(__float_as_uint(v));
#endif
}

}  // namespace kernels
}  // namespace metrale
