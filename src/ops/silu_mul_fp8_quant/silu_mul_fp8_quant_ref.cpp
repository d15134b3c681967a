// silu_mul_fp8_quant_ref.cpp: the SiLU-and-mul references; the quantiser is the FP8 op's reference.
#include "ops/silu_mul_fp8_quant/silu_mul_fp8_quant_ref.hpp"

#include <cmath>
#include <cstddef>

#include "metrale/error.hpp"
#include "ref/bf16.hpp"

namespace metrale::ref {
namespace {

constexpr std::uint32_t kGroup = 128;

void check_shape(std::span<const std::uint16_t> gate, std::span<const std::uint16_t> up, const SiluMulRefShape& s) {
  const auto rows_fit = [&](std::span<const std::uint16_t> x, std::uint32_t stride) {
    return s.m == 0 || x.size() >= std::size_t{s.m - 1} * stride + s.k;
  };
  if (s.k % kGroup != 0 || s.gate_row_stride < s.k || s.up_row_stride < s.k || !rows_fit(gate, s.gate_row_stride) ||
      !rows_fit(up, s.up_row_stride)) {
    throw ArgumentError(
        "silu_mul_fp8_quant reference: K must be a multiple of 128, both row strides >= K, gate and up M rows long");
  }
}

// Calls fn(token, column, g, u) for every element, g and u as floats.
template <typename Fn>
void for_each_element(std::span<const std::uint16_t> gate, std::span<const std::uint16_t> up, const SiluMulRefShape& s,
                      Fn fn) {
  for (std::uint32_t t = 0; t < s.m; ++t) {
    for (std::uint32_t c = 0; c < s.k; ++c) {
      fn(t, c, bf16_to_float(gate[std::size_t{t} * s.gate_row_stride + c]),
         bf16_to_float(up[std::size_t{t} * s.up_row_stride + c]));
    }
  }
}

}  // namespace

std::vector<std::uint16_t> silu_mul_h_reference(std::span<const std::uint16_t> gate, std::span<const std::uint16_t> up,
                                                const SiluMulRefShape& shape) {
  check_shape(gate, up, shape);
  std::vector<std::uint16_t> h(std::size_t{shape.m} * shape.k);
  for_each_element(gate, up, shape, [&](std::uint32_t t, std::uint32_t c, float g, float u) {
    const float silu = g / (1.0f + std::exp(-g));
    h[std::size_t{t} * shape.k + c] = bf16_from_float(silu * u);
  });
  return h;
}

std::vector<double> silu_mul_h_oracle(std::span<const std::uint16_t> gate, std::span<const std::uint16_t> up,
                                      const SiluMulRefShape& shape) {
  check_shape(gate, up, shape);
  std::vector<double> h(std::size_t{shape.m} * shape.k);
  for_each_element(gate, up, shape, [&](std::uint32_t t, std::uint32_t c, float g, float u) {
    const double gd = g;
    h[std::size_t{t} * shape.k + c] = gd / (1.0 + std::exp(-gd)) * static_cast<double>(u);
  });
  return h;
}

Fp8RefResult silu_mul_fp8_quant_reference(std::span<const std::uint16_t> gate, std::span<const std::uint16_t> up,
                                          const SiluMulRefShape& shape) {
  const std::vector<std::uint16_t> h = silu_mul_h_reference(gate, up, shape);
  return fp8_act_quant_reference(h, Fp8RefShape{shape.m, shape.k, shape.k, shape.pow2_scale});
}

}  // namespace metrale::ref
