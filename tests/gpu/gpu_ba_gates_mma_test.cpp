// gpu_ba_gates_mma_test.cpp: the tensor-core BA-gates kernel on a CUDA device (sm_80 and newer,
// the runtime's target must ship it), compiled by the runtime with NVRTC: at the Qwen3.5-27B
// shape over token counts around its tile and guard edges, and at the Qwen3-Next, stacked and
// padded layouts, and over every K split its clusters take (1 to 8 CTAs), with N(0,1) activations and 0.02 N(0,1)
// weights: the relative Frobenius error against the float64 oracle stays below 1e-5, every output is written (poison
// first), padding columns and the rows past M are not; the op picks it exactly when its guard says none and then writes
// the forced kernel's bytes. The device's wmma fragment layout is the real one here, so this is the check the host
// emulation cannot make; so are the cluster's barriers and its distributed shared memory reads.
#include <catch2/catch.hpp>
#include <cstring>

#include "ops/ssm_ba_gates/ssm_ba_gates.hpp"
#include "support/kernels_support.hpp"

using namespace metrale;
using kernels_test::BaCase;
using kernels_test::BaRun;

TEST_CASE("GPU: the tensor-core BA kernel within 1e-5 of the float64 oracle, every output written once",
          "[gpu][ba_gates_mma]") {
  auto runtime = Runtime::open(kernels_test::runtime_options(BackendChoice::kCuda));
  REQUIRE(runtime->has_device());
  const ops::BaGatesKernels kernels = ops::ba_gates_kernels(*runtime);
  if (!kernels.mma.present()) {
    WARN("target " << runtime->target().name << " does not ship ssm_ba_gates_mma: nothing to test");
    return;
  }
  REQUIRE(runtime->levers().on("ssm_ba_gates_tensor_core"));
  GpuBackend& gpu = *runtime->backend();
  const ref::BaGatesRefShape shapes[] = {
      {1, 96, 5120, 5120, 96, 48, 3},       // one token: a tile of 127 idle rows, K over a cluster of 8
      {127, 96, 5120, 5120, 96, 48, 3},     // one token short of a tile
      {256, 96, 5120, 5120, 96, 48, 3},     // the tensor-core floor at 132 SMs: 2 tiles x 8
      {264, 96, 5120, 5120, 96, 48, 3},     // the seeds' twin floor: 3 tiles, the last of 8 tokens
      {2176, 96, 5120, 5120, 96, 48, 3},    // 17 tiles in clusters of 4
      {4480, 96, 5120, 5120, 96, 48, 3},    // 35 tiles in clusters of 2, as at M 8192 (half its oracle time)
      {300, 64, 2048, 2048, 64, 32, 2},     // Qwen3-Next-80B
      {130, 128, 1024, 1024, 128, 64, 64},  // stacked [b; a], N = 128
      {265, 96, 5120, 5128, 99, 48, 3},     // padded activation and output rows
      {97, 42, 1000, 1016, 45, 21, 7},      // K % 64 == 40, a partial output tile
      {300, 96, 320, 320, 96, 48, 3},       // 5 chunks over clusters of 4: one CTA takes 2
  };
  std::uint64_t seed = 8000;
  for (const ref::BaGatesRefShape& s : shapes) {
    const BaCase c = BaCase::normal(s, seed += 10);
    INFO("M=" << s.m << " N=" << s.n << " K=" << s.k << " K_stride=" << s.k_stride << " gate_stride=" << s.gate_stride
              << " vheads_per_group=" << s.vheads_per_group);
    const kernels_test::BaResult mma = kernels_test::run_ba(*runtime, c, BaRun::kMma);
    const kernels_test::BaCoverage coverage = kernels_test::ba_coverage(s, mma.out);
    CHECK(coverage.unwritten == 0);
    CHECK(coverage.padding_written == 0);
    CHECK(mma.guard_written == 0);
    const double error = kernels_test::ba_relative_frobenius_error(s, mma.out, c.oracle());
    INFO("relative Frobenius error against the float64 oracle: " << error);
    CHECK(error < check::kBaGatesMmaMaxRelativeFrobenius);

    const kernels_test::BaResult op = kernels_test::run_ba(*runtime, c, BaRun::kOp);
    const ops::BaGatesMmaQuery query = ops::ba_gates_mma_query(
        gpu, kernels, true,
        {{16}, {16}, {}, {}, {}, s.m, s.n, s.k, s.k_stride, s.gate_stride, s.nv, s.vheads_per_group});
    const bool expect_mma = !ops::ssm_ba_gates_mma_reject(query).has_value();
    REQUIRE(op.pick.has_value());
    CHECK(op.pick->mma == expect_mma);
    if (expect_mma) {
      CHECK(std::memcmp(op.out.data(), mma.out.data(), mma.out.size() * sizeof(float)) == 0);
    }
  }
}
