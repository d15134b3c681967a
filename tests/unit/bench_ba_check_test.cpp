// bench_ba_check_test.cpp: the BA check metrale-ops-bench applies on a device
// (support/ba_gates_check.hpp), on the CPU: gates a few ulp from the reference pass (the device's
// expf / log1pf are allowed to differ from glibc's), a row off by 1e-3 fails and is named, a NaN
// fails, and a twin whose bytes differ from the parent's anywhere in the output fails even when
// every sampled row is close.
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "ref/bf16.hpp"
#include "support/ba_gates_check.hpp"

namespace {

using metrale::check::check_ba_run;

constexpr std::uint32_t kM = 40, kNv = 6, kStride = 2 * kNv + 2;  // two padding columns

// A whole output [kM][kStride] of random gates, the sampled rows, and their reference.
struct Run {
  std::vector<float> out = metrale::ref::random_floats(std::size_t{kM} * kStride, 91, -3.0f, 3.0f);
  std::vector<std::uint32_t> rows{0, 7, 20, kM - 1};
  std::vector<float> expected;
  Run() {
    for (const std::uint32_t r : rows) {
      expected.insert(expected.end(), out.begin() + std::ptrdiff_t(r * kStride),
                      out.begin() + std::ptrdiff_t((r + 1) * kStride));
    }
  }
  float& at(std::uint32_t row, std::uint32_t col) { return out[std::size_t(row) * kStride + col]; }
};

float ulps_away(float value, int ulps) {
  for (int i = 0; i < ulps; ++i) {
    value = std::nextafter(value, INFINITY);
  }
  return value;
}

}  // namespace

TEST_CASE("bench BA check: every gate 2 ulp from the reference passes", "[bench][ba_check]") {
  Run run;
  for (float& v : run.out) {
    v = ulps_away(v, 2);
  }
  const auto verdict = check_ba_run(run.out, run.rows, run.expected, kStride, kNv, {});
  CHECK(verdict.failure.empty());
  CHECK(verdict.worst_gap > 0.0);
  CHECK(verdict.worst_gap <= metrale::check::kBaGatesMaxRelativeGap);
}

TEST_CASE("bench BA check: a sampled row off by 1e-3 fails and is named", "[bench][ba_check]") {
  Run run;
  run.at(20, 3) *= 1.001f;
  const auto verdict = check_ba_run(run.out, run.rows, run.expected, kStride, kNv, {});
  CHECK(verdict.failure.rfind("row 20 ", 0) == 0);
  CHECK(verdict.worst_gap > 9e-4);
}

TEST_CASE("bench BA check: a NaN gate fails, padding columns are not compared", "[bench][ba_check]") {
  Run run;
  run.at(kM - 1, kStride - 1) = 12345.0f;  // padding: the kernels never write it, the check ignores it
  CHECK(check_ba_run(run.out, run.rows, run.expected, kStride, kNv, {}).failure.empty());
  run.at(kM - 1, 2 * kNv - 1) = NAN;
  CHECK_FALSE(check_ba_run(run.out, run.rows, run.expected, kStride, kNv, {}).failure.empty());
}

TEST_CASE("bench BA check: twin bytes differing from the parent's fail, outside the sampled rows too",
          "[bench][ba_check]") {
  Run parent;
  std::vector<float> twin = parent.out;
  CHECK(check_ba_run(twin, parent.rows, parent.expected, kStride, kNv, parent.out).failure.empty());
  // Row 3 is not sampled, and one ulp is within the tolerance: only the byte comparison sees it.
  twin[3 * kStride + 1] = ulps_away(twin[3 * kStride + 1], 1);
  const auto verdict = check_ba_run(twin, parent.rows, parent.expected, kStride, kNv, parent.out);
  CHECK(verdict.failure == "twin output differs from the parent's bytes");
}

TEST_CASE("bench BA check: the tensor-core kernel is judged by its Frobenius error against the oracle",
          "[bench][ba_check]") {
  Run run;
  // The oracle of the sampled rows, [rows][2 nv], and an output a summation order away from it.
  std::vector<double> oracle;
  for (const std::uint32_t r : run.rows) {
    for (std::uint32_t col = 0; col < 2 * kNv; ++col) {
      oracle.push_back(run.at(r, col));
    }
  }
  for (float& v : run.out) {
    v = ulps_away(v, 8);
  }
  const auto close = metrale::check::check_ba_mma_run(run.out, run.rows, oracle, kStride, kNv);
  CHECK(close.failure.empty());
  CHECK(close.worst_gap > 0.0);
  CHECK(close.worst_gap < metrale::check::kBaGatesMmaMaxRelativeFrobenius);
  // One gate off by 1e-2 (a lost term) moves the whole tile's error past the bound.
  run.at(7, 4) += 0.01f * std::fabs(run.at(7, 4)) + 0.01f;
  CHECK_FALSE(metrale::check::check_ba_mma_run(run.out, run.rows, oracle, kStride, kNv).failure.empty());
  run.at(7, 4) = NAN;
  CHECK_FALSE(metrale::check::check_ba_mma_run(run.out, run.rows, oracle, kStride, kNv).failure.empty());
}
