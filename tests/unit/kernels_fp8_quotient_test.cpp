// kernels_fp8_quotient_test.cpp: the FP8 kernels divide by a group's scale through its
// reciprocal and one remainder step (metrale_arith.cuh's fp8_quotient), not an IEEE division.
// Checked here against the plain division v / scale, over every finite bf16 v with |v| <= amax
// (what a group can hold) and a spread of scales, each made as the kernels make it from an amax:
// the e4m3 codes (by the reference's own encoder) are always equal, and the floats themselves are
// equal wherever v and the quotient are not tiny (>= 2^-100), so the shortcut is the division's
// rounding, not an approximation that happens to land on the same codes. (Below that the
// remainder, about 2^-24 v, underflows, so a tiny quotient may differ in its last bit; every
// float below 2^-10 is e4m3 zero.)
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "ops/fp8_act_quant/fp8_act_quant.hpp"

// clang-format off
#include "metrale/host/cuda_host_prelude.hpp"
#include "../../templates/metrale_arith.cuh"
// clang-format on

namespace {

float bf16_bits_to_float(std::uint16_t bits) {
  const std::uint32_t word = static_cast<std::uint32_t>(bits) << 16;
  float value = 0.0F;
  std::memcpy(&value, &word, sizeof value);
  return value;
}

// The amax values whose scales are tried: every 61st positive finite bf16 (an odd stride walks
// every exponent and many mantissas), the extremes and the kernels' floor.
std::vector<float> amax_values() {
  std::vector<float> out;
  for (std::uint32_t bits = 1; bits < 0x7f80U; bits += 61U) {
    out.push_back(bf16_bits_to_float(static_cast<std::uint16_t>(bits)));
  }
  out.push_back(bf16_bits_to_float(0x7f7fU));  // largest finite bf16
  out.push_back(bf16_bits_to_float(0x0080U));  // smallest normal bf16
  out.push_back(bf16_bits_to_float(0x0001U));  // smallest subnormal bf16
  out.push_back(448.0F);
  out.push_back(1.0F);
  out.push_back(1.0e-10F);  // the floor itself
  return out;
}

}  // namespace

TEST_CASE("FP8: the reciprocal-and-remainder quotient is the IEEE division for every bf16 a group can hold",
          "[kernels][fp8]") {
  using metrale::kernels::fp8_group_scale;
  using metrale::kernels::fp8_group_scale_pow2;
  using metrale::kernels::fp8_quotient;
  std::size_t compared = 0;
  std::size_t code_mismatches = 0;
  std::size_t float_mismatches = 0;
  for (const float amax : amax_values()) {
    for (const bool pow2 : {false, true}) {
      const float scale = pow2 ? fp8_group_scale_pow2(amax) : fp8_group_scale(amax);
      const float inv_scale = __frcp_rn(scale);
      for (std::uint32_t bits = 0; bits < 0x10000U; ++bits) {
        const float v = bf16_bits_to_float(static_cast<std::uint16_t>(bits));
        if (!std::isfinite(v) || std::fabs(v) > amax) {
          continue;  // a group's amax bounds each of its values
        }
        const float want = v / scale;
        const float got = fp8_quotient(v, scale, inv_scale);
        ++compared;
        if (metrale::ref::e4m3_encode(got) != metrale::ref::e4m3_encode(want)) {
          ++code_mismatches;
          UNSCOPED_INFO("code differs: v=" << v << " amax=" << amax << " scale=" << scale << " v/scale=" << want
                                           << " shortcut=" << got);
        }
        if (std::fabs(v) >= 0x1p-100F && std::fabs(want) >= 0x1p-100F && std::memcmp(&got, &want, sizeof got) != 0) {
          ++float_mismatches;
          UNSCOPED_INFO("quotient differs: v=" << v << " scale=" << scale << " v/scale=" << want
                                               << " shortcut=" << got);
        }
        if (code_mismatches + float_mismatches > 5) {
          FAIL("too many mismatches");
        }
      }
    }
  }
  CHECK(compared > 10000000U);  // the loops really ran over the grid
  CHECK(code_mismatches == 0);
  CHECK(float_mismatches == 0);
}

TEST_CASE("FP8: the quotient keeps the division's answers at an infinite or NaN scale", "[kernels][fp8]") {
  using metrale::kernels::fp8_quotient;
  const float inf = std::numeric_limits<float>::infinity();
  // A group holding an infinity has an infinite scale: finite values divide to signed zeros.
  CHECK(std::signbit(fp8_quotient(-3.0F, inf, __frcp_rn(inf))));
  CHECK(fp8_quotient(3.0F, inf, __frcp_rn(inf)) == 0.0F);
  CHECK(std::isnan(fp8_quotient(inf, inf, __frcp_rn(inf))));
  CHECK(std::isnan(fp8_quotient(std::nanf(""), 2.0F, 0.5F)));
  CHECK(fp8_quotient(7.0F, 2.0F, 0.5F) == 3.5F);
  // A zero keeps its sign (e4m3 0x80, not 0x00), as the division's does.
  CHECK(std::signbit(fp8_quotient(-0.0F, 3.0F, __frcp_rn(3.0F))));
  CHECK(metrale::ref::e4m3_encode(fp8_quotient(-0.0F, 3.0F, __frcp_rn(3.0F))) == 0x80U);
}
