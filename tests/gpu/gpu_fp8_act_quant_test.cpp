// gpu_fp8_act_quant_test.cpp: the FP8 activation-quant shared kernel and Hopper twin on a CUDA
// device, compiled by the runtime with NVRTC: at K in {5120, 6144, 17408} and M around the
// twin's floor at this device's SM count (52, 53, 54 at K = 5120 on 132 SMs) and at 4096, the
// shared kernel, the twin and the op write the same bytes, equal to the CPU reference (codes and
// scales exactly); the op picks by the floor; every output is written (poison first); column-major
// padding is not; power-of-two scales and padded rows too.
#include <catch2/catch.hpp>
#include <cstring>

#include "ops/fp8_act_quant/fp8_act_quant.hpp"
#include "ops/op_verdict.hpp"
#include "ops/ssm_ba_gates/ssm_ba_gates.hpp"
#include "support/kernels_support.hpp"

using namespace metrale;
using kernels_test::Fp8Case;
using kernels_test::Fp8Result;
using kernels_test::Fp8Run;

namespace {

void check_case(Runtime& runtime, const Fp8Case& c, std::uint32_t floor) {
  INFO("M=" << c.m << " K=" << c.k << " stride=" << c.x_row_stride << " pow2=" << c.pow2
            << " column-major=" << (c.layout == ops::Fp8ScaleLayout::kColumnMajor) << " floor=" << floor);
  const Fp8Result shared = kernels_test::run_fp8(runtime, c, Fp8Run::kShared);
  const Fp8Result twin = kernels_test::run_fp8(runtime, c, Fp8Run::kTwin);
  const Fp8Result op = kernels_test::run_fp8(runtime, c, Fp8Run::kOp);
  REQUIRE_FALSE(shared.pick->twin);
  REQUIRE(twin.pick->twin);
  CHECK(op.pick->twin == (c.m >= floor));
  CHECK(twin.q == shared.q);
  CHECK(op.q == shared.q);
  CHECK(std::memcmp(twin.scales.data(), shared.scales.data(), twin.scales.size() * sizeof(float)) == 0);
  CHECK(std::memcmp(op.scales.data(), shared.scales.data(), op.scales.size() * sizeof(float)) == 0);
  CHECK(std::count(twin.q.begin(), twin.q.end(), kernels_test::kPoisonCode) == 0);
  CHECK(kernels_test::fp8_padding_written(c, twin) == 0);
  const ref::Fp8RefResult want = kernels_test::fp8_reference(c);
  CHECK(twin.q == want.q);
  CHECK(twin.row_major_scales == want.scales);
}

}  // namespace

TEST_CASE("GPU: FP8 twin == shared around the floor at the real K, equal to the reference", "[gpu][fp8]") {
  auto runtime = Runtime::open(kernels_test::runtime_options(BackendChoice::kCuda));
  REQUIRE(runtime->has_device());
  const ops::Fp8QuantKernels kernels = ops::fp8_quant_kernels(*runtime);
  REQUIRE(kernels.shared.present());
  REQUIRE(kernels.twin.present());
  REQUIRE(runtime->levers().on("fp8_act_quant_hopper"));
  const std::uint32_t sm_count =
      ops::device_sm_count(*runtime->backend(), ops::fp8_quant_kernels(*runtime).fallback_sm_count);
  std::uint64_t seed = 7000;
  for (const std::uint32_t k : {5120u, 6144u, 17408u}) {
    const std::uint32_t floor = ops::fp8_quant_hopper_min_m(k, sm_count);
    REQUIRE(floor >= 1);
    for (const std::uint32_t m : {std::max(floor, 2u) - 1, floor, floor + 1, 4096u}) {
      check_case(*runtime, Fp8Case(m, k, k, seed += 10), floor);
    }
    // Padded rows, column-major power-of-two scales with padding rows, at the floor.
    Fp8Case padded(floor, k, k + 8, seed += 10);
    padded.layout = ops::Fp8ScaleLayout::kColumnMajor;
    padded.m_aligned = (floor + 3) / 4 * 4 + 4;
    padded.pow2 = true;
    check_case(*runtime, padded, floor);
  }
}
