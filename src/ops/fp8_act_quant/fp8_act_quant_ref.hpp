// ref/fp8_act_quant_ref.hpp: CPU references of the FP8 activation-quant op, with their
// own e4m3fn rounding (not CUDA's header), so they check the kernels independently.
// Invariants: e4m3_encode rounds to nearest even and saturates to +-448; fp8_act_quant_reference
// computes the same float scale and float quotient as the kernels, so its bytes equal theirs;
// the oracle keeps the scale and quotient in float64, unrounded.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace metrale::ref {

// e4m3fn: 1 sign, 4 exponent (bias 7), 3 mantissa bits; no infinities; 0x7f / 0xff are NaN.
std::uint8_t e4m3_encode(float value);
double e4m3_decode(std::uint8_t code);
// The spacing of e4m3 values at |value| (2^-9 below the smallest normal 2^-6).
double e4m3_step(double value);

struct Fp8RefShape {
  std::uint32_t m = 0, k = 0, x_row_stride = 0;
  bool pow2_scale = false;
};

struct Fp8RefResult {
  std::vector<std::uint8_t> q;  // [m][k]
  std::vector<float> scales;    // [m][k/128], row-major
};

// The kernels' arithmetic with the reference's own e4m3 rounding.
Fp8RefResult fp8_act_quant_reference(std::span<const std::uint16_t> x, const Fp8RefShape& shape);

struct Fp8OracleResult {
  std::vector<double> quotient;  // [m][k]: x / scale, unrounded
  std::vector<double> scales;    // [m][k/128]
};

// The float64 oracle: amax / 448 (or the next power of two at or above it) in double.
Fp8OracleResult fp8_act_quant_oracle(std::span<const std::uint16_t> x, const Fp8RefShape& shape);

}  // namespace metrale::ref
