// kernels_e4m3_conversion_test.cpp: templates/metrale_types.cuh's float -> e4m3fn conversion
// (the software path the host backend and pre-sm_89 GPUs run; sm_89+ use the PTX conversion the
// toolkit uses there) against the FP8 reference's independent encoder (doubles, frexp and nearbyint), over
// a dense sweep of float bit patterns: every (sign, exponent, top 7 mantissa bits) with low bits
// that sit on, just below and just above every rounding point (ties to even included), every
// 257th bit pattern of all 2^32, and seeded random values at each binade of the e4m3 range.
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "ops/fp8_act_quant/fp8_act_quant.hpp"
#include "ref/bf16.hpp"

// clang-format off
#include "metrale/host/cuda_host_prelude.hpp"
#include "../../templates/metrale_types.cuh"
// clang-format on

namespace {

constexpr unsigned kPoison = 0xa5U;

struct SweepResult {
  std::size_t compared = 0;
  std::size_t mismatches = 0;
  std::uint32_t first_mismatch = 0;
};

// Converts every pattern with the template's function into a poisoned buffer, then compares.
SweepResult compare(const std::vector<std::uint32_t>& patterns) {
  std::vector<unsigned> codes(patterns.size(), kPoison);
  for (std::size_t i = 0; i < patterns.size(); ++i) {
    codes[i] = metrale::kernels::e4m3_from_float(std::bit_cast<float>(patterns[i]));
  }
  SweepResult result;
  for (std::size_t i = 0; i < patterns.size(); ++i) {
    ++result.compared;
    if (codes[i] != metrale::ref::e4m3_encode(std::bit_cast<float>(patterns[i]))) {
      if (result.mismatches++ == 0) {
        result.first_mismatch = patterns[i];
      }
    }
  }
  return result;
}

}  // namespace

TEST_CASE("e4m3: known codes", "[kernels][fp8][e4m3]") {
  using metrale::kernels::e4m3_from_float;
  REQUIRE(e4m3_from_float(1.0F) == 0x38U);
  REQUIRE(e4m3_from_float(-1.0F) == 0xb8U);
  REQUIRE(e4m3_from_float(448.0F) == 0x7eU);
  REQUIRE(e4m3_from_float(1.0e6F) == 0x7eU);  // saturates
  REQUIRE(e4m3_from_float(-std::numeric_limits<float>::infinity()) == 0xfeU);
  REQUIRE(e4m3_from_float(std::numeric_limits<float>::quiet_NaN()) == 0x7fU);
  REQUIRE(e4m3_from_float(-std::numeric_limits<float>::quiet_NaN()) == 0x7fU);
  REQUIRE(e4m3_from_float(-0.0F) == 0x80U);
  REQUIRE(e4m3_from_float(std::ldexp(1.0F, -9)) == 0x01U);              // smallest subnormal
  REQUIRE(e4m3_from_float(std::ldexp(1.0F, -10)) == 0x00U);             // half of it: tie to even (0)
  REQUIRE(e4m3_from_float(std::ldexp(3.0F, -10)) == 0x02U);             // 1.5 units: tie to even (2)
  REQUIRE(e4m3_from_float(1.0F + 1.0F / 16.0F) == 0x38U);               // tie between 1 and 1.125: even
  REQUIRE(e4m3_from_float(1.0F + 3.0F / 16.0F) == 0x3aU);               // tie between 1.125 and 1.25: even
  REQUIRE(e4m3_from_float(std::ldexp(15.0F, -10) * 1.0001F) == 0x08U);  // rounds up into the first normal
}

TEST_CASE("e4m3: the template's conversion is the reference encoder on every rounding point", "[kernels][fp8][e4m3]") {
  // The top 16 bits span sign, exponent and 7 mantissa bits; every rounding point of an e4m3 code
  // (mantissa bit 19 down to 23 for subnormals) lies in them, so these low halves put each value
  // exactly on, one ulp below and one ulp above the point, and at its extremes.
  const std::uint32_t lows[] = {0x0000U, 0x0001U, 0x7fffU, 0x8000U, 0x8001U, 0xfffeU, 0xffffU, 0x1234U};
  std::vector<std::uint32_t> patterns;
  patterns.reserve(65536U * std::size(lows));
  for (std::uint32_t high = 0; high < 65536U; ++high) {
    for (const std::uint32_t low : lows) {
      patterns.push_back((high << 16) | low);
    }
  }
  const SweepResult result = compare(patterns);
  INFO("first mismatch at float bits 0x" << std::hex << result.first_mismatch);
  REQUIRE(result.compared == patterns.size());
  REQUIRE(result.mismatches == 0);
}

TEST_CASE("e4m3: every 257th float bit pattern and seeded values at every binade", "[kernels][fp8][e4m3]") {
  std::vector<std::uint32_t> patterns;
  for (std::uint64_t bits = 0; bits <= 0xffffffffULL; bits += 257U) {
    patterns.push_back(static_cast<std::uint32_t>(bits));
  }
  // Uniform in [-1, 1] times 2^e for each e from below the subnormals to past the saturation.
  const std::vector<float> unit = metrale::ref::random_floats(4096, 0x5eed13U, -1.0F, 1.0F);
  for (int exponent = -12; exponent <= 10; ++exponent) {
    for (const float v : unit) {
      patterns.push_back(std::bit_cast<std::uint32_t>(std::ldexp(v, exponent)));
    }
  }
  const SweepResult result = compare(patterns);
  INFO("first mismatch at float bits 0x" << std::hex << result.first_mismatch);
  REQUIRE(result.compared == patterns.size());
  REQUIRE(result.mismatches == 0);
}
