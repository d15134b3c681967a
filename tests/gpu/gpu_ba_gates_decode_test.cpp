// gpu_ba_gates_decode_test.cpp: the decode BA-gates kernel (ssm_ba_gates_splitk) on a CUDA device
// (sm_90 and newer, where its K split runs as a real thread-block cluster reading its peers'
// distributed shared memory; the runtime's target must ship it), compiled by the runtime with
// NVRTC: at the decode token counts of the Qwen3.5-27B shape and at odd layouts, with N(0,1)
// activations and 0.02 N(0,1) weights: within 1e-5 relative Frobenius error of the float64
// oracle and of the parent on the same device, every output written once (poison first), no
// padding column or row past M touched, the same bytes on a second run; the op picks it exactly
// when its guard says none and then writes the forced kernel's bytes.
#include <catch2/catch.hpp>
#include <cstring>

#include "ops/ssm_ba_gates/ssm_ba_gates.hpp"
#include "support/kernels_support.hpp"

using namespace metrale;
using kernels_test::BaCase;
using kernels_test::BaRun;

TEST_CASE("GPU: the decode BA kernel within 1e-5 of the oracle and the parent, every output written once",
          "[gpu][ba_gates_splitk]") {
  auto runtime = Runtime::open(kernels_test::runtime_options(BackendChoice::kCuda));
  REQUIRE(runtime->has_device());
  const ops::BaGatesKernels kernels = ops::ba_gates_kernels(*runtime);
  if (!kernels.splitk.present()) {
    WARN("target " << runtime->target().name << " does not ship ssm_ba_gates_splitk: nothing to test");
    return;
  }
  GpuBackend& gpu = *runtime->backend();
  const ref::BaGatesRefShape shapes[] = {
      {1, 96, 5120, 5120, 96, 48, 3},   // one token: 16 columns x a cluster of 8
      {16, 96, 5120, 5120, 96, 48, 3},  // two tokens a warp
      {64, 96, 5120, 5120, 96, 48, 3},  // the token tile, the guard's ceiling
      {65, 96, 5120, 5120, 96, 48, 3},  // forced past it: two token tiles, clusters of 4
      {7, 64, 2048, 2048, 64, 32, 2},   // Qwen3-Next-80B: a last column of 4 outputs
      {33, 96, 1000, 1016, 99, 48, 3},  // ragged K over the split, padded rows and gate rows
      {5, 128, 512, 512, 128, 64, 64},  // stacked [b; a], a split of 2
  };
  std::uint64_t seed = 9000;
  for (const ref::BaGatesRefShape& s : shapes) {
    const BaCase c = BaCase::normal(s, seed += 10);
    INFO("M=" << s.m << " N=" << s.n << " K=" << s.k << " K_stride=" << s.k_stride << " gate_stride=" << s.gate_stride
              << " vheads_per_group=" << s.vheads_per_group);
    const kernels_test::BaResult decode = kernels_test::run_ba(*runtime, c, BaRun::kSplitK);
    const kernels_test::BaCoverage coverage = kernels_test::ba_coverage(s, decode.out);
    CHECK(coverage.unwritten == 0);
    CHECK(coverage.padding_written == 0);
    CHECK(decode.guard_written == 0);
    CHECK(kernels_test::ba_relative_frobenius_error(s, decode.out, c.oracle()) <
          check::kBaGatesMmaMaxRelativeFrobenius);
    const kernels_test::BaResult parent = kernels_test::run_ba(*runtime, c, BaRun::kParent);
    std::vector<double> parent_out;
    for (std::uint32_t t = 0; t < s.m; ++t) {
      for (std::uint32_t col = 0; col < 2 * s.nv; ++col) {
        parent_out.push_back(parent.out[std::size_t{t} * s.gate_stride + col]);
      }
    }
    CHECK(kernels_test::ba_relative_frobenius_error(s, decode.out, parent_out) <
          check::kBaGatesMmaMaxRelativeFrobenius);
    const kernels_test::BaResult again = kernels_test::run_ba(*runtime, c, BaRun::kSplitK);
    CHECK(std::memcmp(again.out.data(), decode.out.data(), decode.out.size() * sizeof(float)) == 0);

    const kernels_test::BaResult op = kernels_test::run_ba(*runtime, c, BaRun::kOp);
    const ops::BaGatesArgs args{
        {16}, {16}, {}, {}, {}, s.m, s.n, s.k, s.k_stride, s.gate_stride, s.nv, s.vheads_per_group};
    const bool mma_first =
        !ops::ssm_ba_gates_mma_reject(
             ops::ba_gates_mma_query(gpu, kernels, runtime->levers().on("ssm_ba_gates_tensor_core"), args))
             .has_value();
    const bool expect_decode =
        !mma_first && !ops::ssm_ba_gates_decode_reject(
                           ops::ba_gates_decode_query(gpu, kernels, runtime->levers().on("ssm_ba_gates_decode"), args))
                           .has_value();
    REQUIRE(op.pick.has_value());
    CHECK(op.pick->decode == expect_decode);
    if (expect_decode) {
      CHECK(std::memcmp(op.out.data(), decode.out.data(), decode.out.size() * sizeof(float)) == 0);
    }
  }
}
