// ref/silu_mul_fp8_quant_ref.hpp: CPU references of the SiLU-and-mul FP8 quant op, written from
// the spec (DESIGN.md "Kernel C"), not from the templates.
// Invariants: silu_mul_h_reference computes h = bf16(silu(g) * u) in float, silu(g) =
// g / (1 + exp(-g)) with the C library's float exp, and rounds with ref::bf16_from_float, so on
// the host backend (whose expf is the same function) its h is the kernels' bit for bit; the
// quantised result is ref::fp8_act_quant_reference over that h, so its bytes are the FP8 op's;
// silu_mul_h_oracle is the same h in float64, unrounded (a check of the float one, within half
// a bf16 ulp plus exp's error).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ops/fp8_act_quant/fp8_act_quant_ref.hpp"

namespace metrale::ref {

struct SiluMulRefShape {
  std::uint32_t m = 0, k = 0, gate_row_stride = 0, up_row_stride = 0;
  bool pow2_scale = false;
};

// h as bf16 bits, [m][k] (row stride k). ArgumentError for K % 128, a stride < K or a short input.
std::vector<std::uint16_t> silu_mul_h_reference(std::span<const std::uint16_t> gate, std::span<const std::uint16_t> up,
                                                const SiluMulRefShape& shape);

// silu(g) * u in float64, [m][k].
std::vector<double> silu_mul_h_oracle(std::span<const std::uint16_t> gate, std::span<const std::uint16_t> up,
                                      const SiluMulRefShape& shape);

// q [m][k] and row-major scales [m][k/128] of h.
Fp8RefResult silu_mul_fp8_quant_reference(std::span<const std::uint16_t> gate, std::span<const std::uint16_t> up,
                                          const SiluMulRefShape& shape);

}  // namespace metrale::ref
