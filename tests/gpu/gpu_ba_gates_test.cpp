// gpu_ba_gates_test.cpp: the BA-gates parent and Hopper twin on a CUDA device, compiled by the
// runtime with NVRTC: over M in {1, 2, 263, 264, 265, 4096}, N in {64, 96, 128}, K in {2048,
// 5120} and vheads_per_group in {2, 3, nv} (where it divides nv), twin and parent output bytes
// are equal, the op runs the kernel its guard names and writes the same bytes, every output is
// written (poison first) and padding columns are not, and the gates are within
// check::kBaGatesMaxRelativeGap (2e-6) relative of the kernel-order CPU reference (same
// accumulation order; the device's expf / log1pf may differ from the host's by a few ulp, so not
// bit for bit; metrale-ops-bench checks its rows by the same definition).
#include <catch2/catch.hpp>
#include <cstring>

#include "ops/op_verdict.hpp"
#include "ops/ssm_ba_gates/ssm_ba_gates.hpp"
#include "support/kernels_support.hpp"

using namespace metrale;
using kernels_test::BaCase;
using kernels_test::BaRun;

TEST_CASE("GPU: BA gates twin == parent over the issue's shape grid, close to the reference", "[gpu][ba_gates]") {
  auto runtime = Runtime::open(kernels_test::runtime_options_seeds_only(BackendChoice::kCuda));
  REQUIRE(runtime->has_device());
  const ops::BaGatesKernels kernels = ops::ba_gates_kernels(*runtime);
  REQUIRE(kernels.parent.present());
  REQUIRE(kernels.twin.present());
  REQUIRE(runtime->levers().on("ssm_ba_gates_hopper"));
  const std::uint32_t min_tokens = ops::ba_gates_min_tokens(
      ops::device_sm_count(*runtime->backend(), ops::ba_gates_kernels(*runtime).fallback_sm_count));
  std::uint64_t seed = 5000;
  std::size_t cases = 0;
  for (const std::uint32_t k : {2048u, 5120u}) {
    for (const std::uint32_t n : {64u, 96u, 128u}) {
      const std::uint32_t nv = n / 2;
      for (const std::uint32_t m : {1u, 2u, 263u, 264u, 265u, 4096u}) {
        // Padded activation rows and output rows at two of the token counts.
        const bool padded = m == 2u || m == 265u;
        const ref::BaGatesRefShape base{m, n, k, padded ? k + 8 : k, padded ? 2 * nv + 3 : 2 * nv, nv, 1};
        BaCase c(base, seed += 10);
        for (const std::uint32_t vpg : {2u, 3u, nv}) {
          if (nv % vpg != 0) {
            continue;
          }
          c.shape.vheads_per_group = vpg;
          INFO("M=" << m << " N=" << n << " K=" << k << " vheads_per_group=" << vpg << " padded=" << padded);
          const std::vector<float> parent = kernels_test::run_ba(*runtime, c, BaRun::kParent).out;
          const std::vector<float> twin = kernels_test::run_ba(*runtime, c, BaRun::kTwin).out;
          const kernels_test::BaResult op = kernels_test::run_ba(*runtime, c, BaRun::kOp);
          for (const std::vector<float>* out : {&parent, &twin}) {
            const kernels_test::BaCoverage coverage = kernels_test::ba_coverage(c.shape, *out);
            CHECK(coverage.unwritten == 0);
            CHECK(coverage.padding_written == 0);
          }
          CHECK(std::memcmp(twin.data(), parent.data(), twin.size() * sizeof(float)) == 0);
          CHECK(op.pick->twin == (m >= min_tokens));
          CHECK(std::memcmp(op.out.data(), parent.data(), parent.size() * sizeof(float)) == 0);
          const double gap = kernels_test::ba_worst_relative_gap(c.shape, twin, c.reference());
          INFO("worst relative gap to the reference: " << gap);
          CHECK(gap <= check::kBaGatesMaxRelativeGap);
          ++cases;
        }
      }
    }
  }
  CHECK(cases == 2 * 6 * (2 + 3 + 2));
}

TEST_CASE("GPU: BA gates at the real shape stay within 1e-5 of the float64 oracle", "[gpu][ba_gates]") {
  auto runtime = Runtime::open(kernels_test::runtime_options_seeds_only(BackendChoice::kCuda));
  REQUIRE(runtime->has_device());
  const BaCase c({264, 96, 5120, 5120, 96, 48, 3}, 6000);
  const std::vector<float> twin = kernels_test::run_ba(*runtime, c, BaRun::kTwin).out;
  const double worst = kernels_test::ba_worst_relative_error(c.shape, twin, c.oracle());
  INFO("worst relative error against the float64 oracle: " << worst);
  CHECK(worst < 1e-5);
}
