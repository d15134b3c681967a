// ref_fp8_act_quant.cpp: the FP8 reference's own e4m3fn rounding against CUDA's host
// conversion and exact cases, and the reference against the float64 oracle.
#include <cuda_fp8.h>

#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <vector>

#include "ops/fp8_act_quant/fp8_act_quant.hpp"
#include "ref/bf16.hpp"

using namespace metrale::ref;

namespace {

std::uint8_t cuda_e4m3(float v) {
  return static_cast<std::uint8_t>(__nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3));
}

}  // namespace

TEST_CASE("e4m3 encoding: exact values, ties to even, saturation, subnormals", "[ref][fp8]") {
  CHECK(e4m3_encode(0.0f) == 0x00);
  CHECK(e4m3_encode(-0.0f) == 0x80);
  CHECK(e4m3_encode(1.0f) == 0x38);
  CHECK(e4m3_encode(448.0f) == 0x7e);
  CHECK(e4m3_encode(-448.0f) == 0xfe);
  CHECK(e4m3_encode(1e9f) == 0x7e);
  CHECK(e4m3_encode(-1e9f) == 0xfe);
  CHECK(e4m3_encode(460.0f) == 0x7e);
  CHECK(e4m3_encode(0x1p-9f) == 0x01);       // smallest subnormal
  CHECK(e4m3_encode(0x1p-10f) == 0x00);      // half of it: tie to even (0)
  CHECK(e4m3_encode(3 * 0x1p-10f) == 0x02);  // 1.5 units: tie to even (2)
  CHECK(e4m3_encode(0x1p-6f) == 0x08);       // smallest normal
  CHECK(e4m3_encode(1.0625f) == 0x38);       // 1 + half a step: tie to even (1.0)
  CHECK(e4m3_encode(1.1875f) == 0x3a);       // 1.125 + half a step: tie to even (1.25)
  CHECK(e4m3_encode(15.5f) == 0x58);         // rounds up into the next binade (16)
  for (int code = 0; code < 256; ++code) {
    if ((code & 0x7f) == 0x7f) {
      CHECK(std::isnan(e4m3_decode(static_cast<std::uint8_t>(code))));
      continue;
    }
    const double v = e4m3_decode(static_cast<std::uint8_t>(code));
    INFO("code " << code);
    REQUIRE(e4m3_encode(static_cast<float>(v)) == code);
  }
  CHECK(e4m3_decode(0x7e) == 448.0);
  CHECK(e4m3_step(1.0) == 0.125);
  CHECK(e4m3_step(300.0) == 32.0);
  CHECK(e4m3_step(0.001) == 0x1p-9);
}

TEST_CASE("the reference's e4m3 rounding agrees with CUDA's conversion", "[ref][fp8]") {
  // Every float whose magnitude is in e4m3's range, sampled densely: all bf16 patterns, plus
  // random floats and the exact midpoints between neighbouring codes.
  int checked = 0;
  for (std::uint32_t bits = 0; bits < 0x10000; ++bits) {
    const float v = bf16_to_float(static_cast<std::uint16_t>(bits));
    if (std::isnan(v)) {
      continue;
    }
    REQUIRE(e4m3_encode(v) == cuda_e4m3(v));
    ++checked;
  }
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-500.0f, 500.0f);
  for (int i = 0; i < 20000; ++i) {
    const float v = dist(rng) * (i % 2 == 0 ? 1.0f : 0x1p-8f);
    REQUIRE(e4m3_encode(v) == cuda_e4m3(v));
  }
  for (int code = 0; code < 0x7e; ++code) {
    const float mid = static_cast<float>(
        (e4m3_decode(static_cast<std::uint8_t>(code)) + e4m3_decode(static_cast<std::uint8_t>(code + 1))) / 2);
    REQUIRE(e4m3_encode(mid) == cuda_e4m3(mid));
    REQUIRE(e4m3_encode(-mid) == cuda_e4m3(-mid));
  }
  CHECK(checked > 60000);
}

TEST_CASE("the FP8 reference matches the float64 oracle: scales exact, codes within one step", "[ref][fp8]") {
  for (const bool pow2 : {false, true}) {
    for (const auto& [m, k, stride] : {std::tuple{3u, 5120u, 5120u}, {2u, 1152u, 1160u}, {1u, 128u, 128u}}) {
      const Fp8RefShape shape{m, k, stride, pow2};
      const auto x = metrale::ref::random_bf16(std::size_t{m} * stride, 900 + k, 4.0f);
      const Fp8RefResult got = fp8_act_quant_reference(x, shape);
      const Fp8OracleResult want = fp8_act_quant_oracle(x, shape);
      INFO("pow2=" << pow2 << " M=" << m << " K=" << k);
      REQUIRE(got.scales.size() == want.scales.size());
      for (std::size_t i = 0; i < got.scales.size(); ++i) {
        REQUIRE(static_cast<double>(got.scales[i]) == static_cast<float>(want.scales[i]));
        if (pow2) {
          int e = 0;
          REQUIRE(std::frexp(got.scales[i], &e) == 0.5f);
        }
      }
      std::size_t exact_codes = 0;
      for (std::size_t i = 0; i < got.q.size(); ++i) {
        const double target = std::clamp(want.quotient[i], -448.0, 448.0);
        const double decoded = e4m3_decode(got.q[i]);
        REQUIRE(std::fabs(decoded - target) <= e4m3_step(target));
        exact_codes += decoded == target ? 1 : 0;
      }
      CHECK(exact_codes < got.q.size());  // the quotients are not all representable
      // Each group's largest element lands on +-448 with fp32 scales (within rounding).
      if (!pow2) {
        for (std::uint32_t t = 0; t < m; ++t) {
          for (std::uint32_t g = 0; g < k / 128; ++g) {
            int top = 0;
            for (std::uint32_t i = 0; i < 128; ++i) {
              top = std::max(top, got.q[std::size_t{t} * k + g * 128 + i] & 0x7f);
            }
            REQUIRE(top == 0x7e);
          }
        }
      }
    }
  }
}
