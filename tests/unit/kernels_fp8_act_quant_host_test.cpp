// kernels_fp8_act_quant_host_test.cpp: the FP8 activation-quant shared kernel and Hopper twin
// from src/ops/fp8_act_quant/, run through the runtime on the host backend: at the real K around the twin's
// floor (a small SM count keeps M small) the op picks by the floor, and the shared kernel, the
// twin and the op write the same bytes, equal to the reference; scales equal the float64 oracle
// exactly and every code is within one e4m3 step of it; scale layouts, power-of-two scales and
// padded rows; every output written, column-major padding untouched.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <sstream>

#include "ops/fp8_act_quant/fp8_act_quant.hpp"
#include "support/kernels_support.hpp"

using namespace metrale;
using kernels_test::Fp8Case;
using kernels_test::Fp8Result;
using kernels_test::Fp8Run;

namespace {

std::string describe(const Fp8Case& c) {
  std::ostringstream out;
  out << "M=" << c.m << " K=" << c.k << " x_row_stride=" << c.x_row_stride << " pow2=" << c.pow2
      << (c.layout == ops::Fp8ScaleLayout::kColumnMajor ? " column-major m_aligned=" : " row-major")
      << (c.layout == ops::Fp8ScaleLayout::kColumnMajor ? std::to_string(c.m_aligned) : std::string());
  return out.str();
}

// One run against the reference and the oracle, and its coverage.
void check_against_references(const Fp8Case& c, const Fp8Result& r) {
  INFO(describe(c));
  std::size_t unwritten_codes = 0;
  for (std::uint8_t code : r.q) {
    unwritten_codes += code == kernels_test::kPoisonCode ? 1 : 0;
  }
  CHECK(unwritten_codes == 0);
  CHECK(kernels_test::fp8_padding_written(c, r) == 0);
  const ref::Fp8RefResult want = kernels_test::fp8_reference(c);
  CHECK(r.q == want.q);
  CHECK(r.row_major_scales == want.scales);  // a poisoned (NaN) scale fails here too

  const ref::Fp8OracleResult oracle = ref::fp8_act_quant_oracle(c.x, c.ref_shape());
  std::size_t inexact_scales = 0;
  for (std::size_t i = 0; i < oracle.scales.size(); ++i) {
    inexact_scales += static_cast<double>(r.row_major_scales[i]) == static_cast<float>(oracle.scales[i]) ? 0 : 1;
  }
  CHECK(inexact_scales == 0);
  std::size_t far_codes = 0;
  for (std::size_t i = 0; i < r.q.size(); ++i) {
    const double target = std::clamp(oracle.quotient[i], -448.0, 448.0);
    far_codes += std::fabs(ref::e4m3_decode(r.q[i]) - target) <= ref::e4m3_step(target) ? 0 : 1;
  }
  CHECK(far_codes == 0);
}

// Shared forced, twin forced, and the op: the same bytes, checked against the references.
Fp8Result check_all_runs(Runtime& runtime, const Fp8Case& c) {
  INFO(describe(c));
  const Fp8Result shared = kernels_test::run_fp8(runtime, c, Fp8Run::kShared);
  const Fp8Result twin = kernels_test::run_fp8(runtime, c, Fp8Run::kTwin);
  REQUIRE_FALSE(shared.pick->twin);
  REQUIRE(twin.pick->twin);
  CHECK(twin.q == shared.q);
  CHECK(std::memcmp(twin.scales.data(), shared.scales.data(), twin.scales.size() * sizeof(float)) == 0);
  check_against_references(c, twin);
  return twin;
}

}  // namespace

TEST_CASE("FP8 quant on the host: real K around the twin's floor, twin == shared == reference", "[kernels][fp8]") {
  // 16 SMs: the floor is 32 CTAs, so M is a handful of tokens at each real K.
  const std::uint32_t sm_count = 16;
  auto runtime = Runtime::open(kernels_test::runtime_options(BackendChoice::kHost, sm_count));
  REQUIRE(runtime->has_device());
  REQUIRE(runtime->levers().on("fp8_act_quant_hopper"));
  const ops::Fp8QuantKernels kernels = ops::fp8_quant_kernels(*runtime);
  REQUIRE(kernels.shared.present());
  REQUIRE(kernels.twin.present());
  std::uint64_t seed = 3000;
  for (const std::uint32_t k : {5120u, 6144u, 17408u}) {
    const std::uint32_t floor = ops::fp8_quant_hopper_min_m(k, sm_count);
    REQUIRE(floor > 1);
    for (const std::uint32_t m : {floor - 1, floor, floor + 1}) {
      const Fp8Case c(m, k, k, seed += 10);
      INFO(describe(c) << " floor=" << floor);
      const Fp8Result twin = check_all_runs(*runtime, c);
      const Fp8Result op = kernels_test::run_fp8(*runtime, c, Fp8Run::kOp);
      CHECK(op.pick->twin == (m >= floor));
      CHECK(op.pick->reject == (m >= floor ? std::nullopt : std::optional(ops::kFp8QuantTooFewCtas)));
      CHECK(op.pick->grid == ops::fp8_quant_grid(op.pick->twin, m, k, op.pick->twin ? 8u : 1u));
      CHECK(op.q == twin.q);
      CHECK(op.scales == twin.scales);
    }
  }
}

TEST_CASE("FP8 quant on the host: scale layouts, power-of-two scales, padded rows", "[kernels][fp8]") {
  auto runtime = Runtime::open(kernels_test::runtime_options(BackendChoice::kHost, 2));
  struct Layout {
    std::uint32_t m, k, stride;
    ops::Fp8ScaleLayout layout;
    std::uint32_t m_aligned;
    bool pow2;
  };
  const Layout layouts[] = {
      {3, 5120, 5120, ops::Fp8ScaleLayout::kRowMajor, 0, true},      // UE8M0 scales
      {5, 1152, 1160, ops::Fp8ScaleLayout::kRowMajor, 0, false},     // padded rows, 9 groups (twin tail)
      {5, 1152, 1160, ops::Fp8ScaleLayout::kColumnMajor, 8, false},  // column-major, padded to 8
      {6, 2048, 2048, ops::Fp8ScaleLayout::kColumnMajor, 12, true},  // column-major, pow2, 2 padding rows x 2
      {4, 128, 136, ops::Fp8ScaleLayout::kColumnMajor, 4, false},    // one group, m_aligned == M
      {1, 17408, 17416, ops::Fp8ScaleLayout::kRowMajor, 0, true},    // one token, the widest K, padded
  };
  std::uint64_t seed = 4000;
  for (const Layout& l : layouts) {
    Fp8Case c(l.m, l.k, l.stride, seed += 10);
    c.layout = l.layout;
    c.m_aligned = l.m_aligned;
    c.pow2 = l.pow2;
    const Fp8Result twin = check_all_runs(*runtime, c);
    if (c.pow2) {
      for (float scale : twin.row_major_scales) {
        int exponent = 0;
        REQUIRE(std::frexp(scale, &exponent) == 0.5f);
      }
    }
  }
}
