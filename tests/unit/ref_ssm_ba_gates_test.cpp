// ref_ssm_ba_gates.cpp: the BA-gates kernel-order reference against the float64 oracle, and
// the bf16 helpers the tests rely on.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <vector>

#include "metrale/error.hpp"
#include "ops/ssm_ba_gates/ssm_ba_gates.hpp"
#include "ref/bf16.hpp"

using namespace metrale;
using namespace metrale::ref;

namespace {

struct BaCase {
  BaGatesRefShape shape;
  std::vector<std::uint16_t> x, w;
  std::vector<float> a_log, dt_bias;

  explicit BaCase(BaGatesRefShape s, std::uint64_t seed) : shape(s) {
    x = random_bf16(std::size_t{s.m} * s.k_stride, seed, 1.0f);
    w = random_bf16(std::size_t{s.n} * s.k, seed + 1, 0.05f);
    a_log = random_floats(s.nv, seed + 2, -2.0f, 1.0f);
    dt_bias = random_floats(s.nv, seed + 3, -1.0f, 1.0f);
  }
  [[nodiscard]] BaGatesRefInputs inputs() const { return {x, w, a_log, dt_bias}; }
};

}  // namespace

TEST_CASE("bf16 helpers round to nearest even and never draw zero", "[ref]") {
  CHECK(bf16_from_float(1.0f) == 0x3f80);
  CHECK(bf16_to_float(0x3f80) == 1.0f);
  CHECK(bf16_from_float(-2.5f) == 0xc020);
  // 1 + 2^-8 is exactly half-way between 1 and 1 + 2^-7: ties go to the even mantissa (1).
  CHECK(bf16_from_float(1.0f + 0x1p-8f) == 0x3f80);
  CHECK(bf16_from_float(1.0f + 0x1p-8f + 0x1p-9f) == 0x3f81);
  CHECK(bf16_from_float(1.0f + 3 * 0x1p-8f) == 0x3f82);
  CHECK(std::isnan(bf16_to_float(bf16_from_float(std::numeric_limits<float>::quiet_NaN()))));
  const auto values = random_bf16(4096, 42);
  CHECK(values == random_bf16(4096, 42));
  CHECK(values != random_bf16(4096, 43));
  for (std::uint16_t v : values) {
    REQUIRE((v & 0x7fff) != 0);
    REQUIRE(std::fabs(bf16_to_float(v)) <= 1.0f);
  }
}

TEST_CASE("the BA reference matches the float64 oracle to 1e-5 relative", "[ref][ba_gates]") {
  const BaGatesRefShape shapes[] = {
      {3, 96, 5120, 5120, 96, 48, 3},   // Qwen3.5-27B
      {2, 64, 2048, 2056, 70, 32, 2},   // Qwen3-Next-80B, padded rows
      {2, 64, 2048, 2048, 64, 32, 32},  // stacked [b; a]
      {1, 6, 8, 8, 6, 3, 1},            // one 16-byte vector per row
  };
  std::uint64_t seed = 100;
  for (const BaGatesRefShape& s : shapes) {
    const BaCase c(s, seed += 10);
    std::vector<float> out(std::size_t{s.m} * s.gate_stride, -12345.0f);
    ssm_ba_gates_reference(c.inputs(), s, out);
    const std::vector<double> oracle = ssm_ba_gates_oracle(c.inputs(), s);
    double worst = 0.0;
    for (std::uint32_t t = 0; t < s.m; ++t) {
      for (std::uint32_t col = 0; col < 2 * s.nv; ++col) {
        const double want = oracle[std::size_t{t} * 2 * s.nv + col];
        const double got = out[std::size_t{t} * s.gate_stride + col];
        REQUIRE(want != 0.0);
        worst = std::max(worst, std::fabs(got - want) / std::fabs(want));
      }
      for (std::uint32_t col = 2 * s.nv; col < s.gate_stride; ++col) {
        REQUIRE(out[std::size_t{t} * s.gate_stride + col] == -12345.0f);  // padding untouched
      }
    }
    INFO("M=" << s.m << " N=" << s.n << " K=" << s.k << " worst relative error " << worst);
    CHECK(worst < 1e-5);
  }
}

TEST_CASE("the BA reference keeps the kernels' summation order, not a sequential sum", "[ref][ba_gates]") {
  const BaGatesRefShape s{1, 2, 5120, 5120, 2, 1, 1};
  const BaCase c(s, 7);
  const std::vector<float> acc = ssm_ba_gates_reference_acc(c.inputs(), s);
  // A sequential float sum of the same products usually differs in the last bits; the oracle
  // bounds both.
  int differs = 0;
  for (std::uint32_t n = 0; n < s.n; ++n) {
    float sequential = 0.0f;
    double exact = 0.0;
    for (std::uint32_t i = 0; i < s.k; ++i) {
      const float p = bf16_to_float(c.x[i]) * bf16_to_float(c.w[std::size_t{n} * s.k + i]);
      sequential += p;
      exact += static_cast<double>(p);
    }
    differs += sequential != acc[n] ? 1 : 0;
    CHECK(std::fabs(acc[n] - exact) <= 1e-5 * std::fabs(exact) + 1e-6);
  }
  CHECK(differs > 0);
}

TEST_CASE("the BA reference refuses inputs that do not fit the shape", "[ref][ba_gates]") {
  const BaGatesRefShape s{2, 96, 5120, 5120, 96, 48, 3};
  const BaCase c(s, 3);
  BaGatesRefShape bad = s;
  bad.m = 3;
  std::vector<float> out(300 * 96);
  CHECK_THROWS_AS(ssm_ba_gates_reference(c.inputs(), bad, out), ArgumentError);
  bad = s;
  bad.vheads_per_group = 5;
  CHECK_THROWS_AS(ssm_ba_gates_oracle(c.inputs(), bad), ArgumentError);
  std::vector<float> small(10);
  CHECK_THROWS_AS(ssm_ba_gates_reference(c.inputs(), s, small), ArgumentError);
}
