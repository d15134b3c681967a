// ops_check_bf16_ulps_test.cpp: ref::bf16_ulp_distance (bf16 steps between two values, against
// an independent count: stepping with std::nextafter in float and rounding to bf16) and
// check::compare_bf16_ulps (what the SiLU-and-mul parent's h is held to): equal bits pass naming
// the count, one ulp passes counting the differing elements, two ulps and a NaN fail naming the
// worst element.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "ops/op_check_support.hpp"
#include "ref/bf16.hpp"

using namespace metrale;

namespace {

// The next bf16 above `bits` (towards +infinity), found by stepping in float, not by its bits.
std::uint16_t next_bf16_up(std::uint16_t bits) {
  float value = ref::bf16_to_float(bits);
  std::uint16_t next = bits;
  while (next == bits) {  // the inputs are far from zero: no -0 / +0 step to skip
    value = std::nextafter(value, INFINITY);
    next = ref::bf16_from_float(value);
  }
  return next;
}

}  // namespace

TEST_CASE("bf16_ulp_distance counts the bf16 values between two, across zero too", "[ref][bf16][ulps]") {
  const std::vector<std::uint16_t> start = ref::random_bf16(200, 91, 8.0F);
  for (const std::uint16_t a : start) {
    INFO(a);
    std::uint16_t b = a;
    for (std::uint32_t steps = 1; steps <= 3; ++steps) {
      b = next_bf16_up(b);
      CHECK(ref::bf16_ulp_distance(a, b) == steps);
      CHECK(ref::bf16_ulp_distance(b, a) == steps);  // symmetric
    }
    CHECK(ref::bf16_ulp_distance(a, a) == 0);
  }
  CHECK(ref::bf16_ulp_distance(0x0000, 0x8000) == 0);  // +0 and -0
  CHECK(ref::bf16_ulp_distance(0x0001, 0x8001) == 2);  // the two smallest subnormals
  CHECK(ref::bf16_ulp_distance(0x7f7f, 0x7f80) == 1);  // the largest finite and +infinity
  CHECK(ref::bf16_ulp_distance(0x7fc0, 0x7fc0) == 0);  // a NaN is its own bits
  CHECK(ref::bf16_ulp_distance(0x7fc0, 0x7fc1) == ref::kNotNear);
  CHECK(ref::bf16_ulp_distance(0x3f80, 0x7fab) == ref::kNotNear);
}

TEST_CASE("compare_bf16_ulps: within the bound passes counting what differs, past it fails naming the worst",
          "[ops][check][ulps]") {
  constexpr std::size_t kCols = 16;
  const std::vector<std::uint16_t> want = ref::random_bf16(4 * kCols, 17, 4.0F);
  ops::CheckResult result;
  result.verdict = ops::CheckVerdict::kFailed;  // poisoned: the call must set it

  ops::check::compare_bf16_ulps(result, "h", want, want, kCols, 1, "the reference");
  CHECK(result.verdict == ops::CheckVerdict::kPassed);
  CHECK(result.worst == "all 64 h elements equal the reference's bytes");

  std::vector<std::uint16_t> got = want;
  got[5] = next_bf16_up(got[5]);
  got[40] = next_bf16_up(got[40]);
  result.verdict = ops::CheckVerdict::kFailed;
  ops::check::compare_bf16_ulps(result, "h", got, want, kCols, 1, "the reference");
  CHECK(result.verdict == ops::CheckVerdict::kPassed);
  CHECK_THAT(result.worst,
             Catch::StartsWith("h: 2 of 64 differ from the reference, 0 by > 1 bf16 ulp; worst h[0][5]") &&
                 Catch::EndsWith("(1 ulp)"));

  got[37] = next_bf16_up(next_bf16_up(got[37]));  // h[2][5], two steps
  ops::check::compare_bf16_ulps(result, "h", got, want, kCols, 1, "the reference");
  CHECK(result.verdict == ops::CheckVerdict::kFailed);
  CHECK_THAT(result.worst, Catch::Contains("3 of 64 differ") && Catch::Contains("1 by > 1 bf16 ulp; worst h[2][5]") &&
                               Catch::EndsWith("(2 ulp)"));

  got[63] = 0x7fab;  // an unwritten (poisoned) element
  ops::check::compare_bf16_ulps(result, "h", got, want, kCols, 1, "the reference");
  CHECK(result.verdict == ops::CheckVerdict::kFailed);
  CHECK_THAT(result.worst, Catch::Contains("worst h[3][15] = 0x7fab") && Catch::EndsWith("(a NaN)"));

  got.pop_back();
  ops::check::compare_bf16_ulps(result, "h", got, want, kCols, 1, "the reference");
  CHECK(result.verdict == ops::CheckVerdict::kFailed);
  CHECK(result.worst == "h: 63 elements, the reference has 64");
}
