// ops_check_frobenius_test.cpp: check::compare_frobenius (what the BA tensor-core and decode
// kernels are held to): a scaled copy of the reference (its error near the scale's gap, computed
// here in long double from the definition), inside the bound passes and past it fails; an unwritten
// (NaN) element fails; a result of the wrong size fails without reading past either side; the
// message names where the reference came from ("oracle" or "parent").
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "ops/op_check_support.hpp"

using namespace metrale;

namespace {

std::vector<double> random_values(std::size_t count, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> dist(0.0, 3.0);
  std::vector<double> out(count);
  for (double& v : out) {
    v = dist(rng);
  }
  return out;
}

// want x (1 + gap), in float: its relative Frobenius error against want is |gap| up to float rounding.
std::vector<float> scaled(const std::vector<double>& want, double gap) {
  std::vector<float> out(want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    out[i] = static_cast<float>(want[i] * (1.0 + gap));
  }
  return out;
}

// sqrt(sum (got - want)^2 / sum want^2), the definition, in long double.
double relative_frobenius(const std::vector<float>& got, const std::vector<double>& want) {
  long double diff = 0;
  long double norm = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const long double gap = static_cast<long double>(got[i]) - want[i];
    diff += gap * gap;
    norm += static_cast<long double>(want[i]) * want[i];
  }
  return static_cast<double>(std::sqrt(diff / norm));
}

ops::CheckResult poisoned() {
  ops::CheckResult result;
  result.verdict = ops::CheckVerdict::kSkipped;
  result.worst = "poison";
  return result;
}

}  // namespace

TEST_CASE("compare_frobenius passes inside its bound, fails past it, names the reference", "[ops][check][frobenius]") {
  constexpr std::size_t kCols = 24;
  const std::vector<double> want = random_values(5 * kCols, 41);

  const std::vector<float> near = scaled(want, 2e-6);
  const double near_error = relative_frobenius(near, want);
  REQUIRE(near_error == Approx(2e-6).epsilon(0.05));  // float rounding moves it a little
  ops::CheckResult inside = poisoned();
  ops::check::compare_frobenius(inside, "gate_out", near, want, kCols, 1e-5, "parent");
  INFO(inside.worst);
  CHECK(inside.verdict == ops::CheckVerdict::kPassed);
  CHECK(inside.worst.find(fmt::format("rel Frobenius {:.3g} (bound 1e-05)", near_error)) == 0);
  CHECK(inside.worst.find(", parent ") != std::string::npos);
  CHECK(inside.worst.find("oracle") == std::string::npos);

  const std::vector<float> far = scaled(want, 3e-5);
  const double far_error = relative_frobenius(far, want);
  REQUIRE(far_error == Approx(3e-5).epsilon(0.05));
  ops::CheckResult past = poisoned();
  ops::check::compare_frobenius(past, "gate_out", far, want, kCols, 1e-5, "oracle");
  INFO(past.worst);
  CHECK(past.verdict == ops::CheckVerdict::kFailed);
  CHECK(past.worst.find(fmt::format("rel Frobenius {:.3g} (bound 1e-05)", far_error)) == 0);
  CHECK(past.worst.find(", oracle ") != std::string::npos);
}

TEST_CASE("compare_frobenius fails an unwritten element and a result of the wrong size", "[ops][check][frobenius]") {
  constexpr std::size_t kCols = 8;
  const std::vector<double> want = random_values(4 * kCols, 7);
  std::vector<float> got = scaled(want, 0.0);

  got[13] = NAN;
  ops::CheckResult nan_result = poisoned();
  ops::check::compare_frobenius(nan_result, "gate_out", got, want, kCols, 1e-5, "oracle");
  CHECK(nan_result.verdict == ops::CheckVerdict::kFailed);
  CHECK(nan_result.worst.find("gate_out[1][5] = nan") != std::string::npos);

  got.resize(want.size() - 3);  // a short result: nothing past its end is read (ASan sees it)
  ops::CheckResult short_result = poisoned();
  ops::check::compare_frobenius(short_result, "gate_out", got, want, kCols, 1e-5, "parent");
  CHECK(short_result.verdict == ops::CheckVerdict::kFailed);
  CHECK(short_result.worst == "gate_out: 29 elements, parent has 32");
}
