// kernels_ba_gates_splitk_host_test.cpp: the decode BA-gates kernel (src/ops/ssm_ba_gates/
// ssm_ba_gates_splitk.cuh) on the host backend, where a cluster's CTAs run on threads of their own
// and read each other's shared memory: against the float64 oracle (relative Frobenius error < 1e-5
// with N(0,1) activations and 0.02 N(0,1) weights) and against the parent at the same bound, at
// the decode shapes and at odd ones (one token, a partial token tile past the first, a partial
// output column, padded rows and a padded gate row, K with a ragged split); every output written
// once, nothing past the last token or the gate row; the same bytes on every run; with the split
// of 2 at K = 512 (one vector a lane on each rank, as the parent's 64 lanes) the parent's bytes.
#include <catch2/catch.hpp>
#include <cstring>

#include "ops/ssm_ba_gates/ssm_ba_gates.hpp"
#include "support/kernels_support.hpp"

using namespace metrale;
using kernels_test::BaCase;
using kernels_test::BaRun;
using kernels_test::describe;

namespace {

std::vector<float> check_splitk(Runtime& runtime, const BaCase& c) {
  INFO(describe(c.shape));
  const kernels_test::BaResult run = kernels_test::run_ba(runtime, c, BaRun::kSplitK);
  const kernels_test::BaCoverage coverage = kernels_test::ba_coverage(c.shape, run.out);
  CHECK(coverage.unwritten == 0);
  CHECK(coverage.padding_written == 0);
  CHECK(run.guard_written == 0);
  const double error = kernels_test::ba_relative_frobenius_error(c.shape, run.out, c.oracle());
  INFO("relative Frobenius error against the float64 oracle: " << error);
  CHECK(error < metrale::check::kBaGatesMmaMaxRelativeFrobenius);
  const kernels_test::BaResult parent = kernels_test::run_ba(runtime, c, BaRun::kParent);
  std::vector<double> parent_out;
  for (std::uint32_t t = 0; t < c.shape.m; ++t) {
    for (std::uint32_t col = 0; col < 2 * c.shape.nv; ++col) {
      parent_out.push_back(parent.out[std::size_t{t} * c.shape.gate_stride + col]);
    }
  }
  const double against_parent = kernels_test::ba_relative_frobenius_error(c.shape, run.out, parent_out);
  INFO("relative Frobenius error against the parent: " << against_parent);
  CHECK(against_parent < metrale::check::kBaGatesMmaMaxRelativeFrobenius);
  return run.out;
}

}  // namespace

TEST_CASE("BA gates at decode sizes (host): M 1 and 64 at K=5120 N=96 within 1e-5 of the oracle and the parent",
          "[kernels][ba_gates_splitk]") {
  auto runtime = Runtime::open(kernels_test::runtime_options(BackendChoice::kHost, 132));
  REQUIRE(runtime->has_device());
  const ops::BaGatesKernels kernels = ops::ba_gates_kernels(*runtime);
  REQUIRE(kernels.splitk.present());
  for (const std::uint32_t m : {1U, 64U}) {
    const ops::BaGatesArgs args{{}, {}, {}, {}, {}, m, 96, 5120, 5120, 96, 48, 3};
    CHECK(ops::ba_gates_splitk_cluster(*runtime->backend(), kernels.splitk_params, args) == 8);
    check_splitk(*runtime, BaCase::normal({m, 96, 5120, 5120, 96, 48, 3}, 8100 + m));
  }
}

TEST_CASE("BA gates at decode sizes (host): odd shapes, every output written once, no byte outside the output",
          "[kernels][ba_gates_splitk]") {
  auto runtime = Runtime::open(kernels_test::runtime_options(BackendChoice::kHost, 132));
  REQUIRE(runtime->has_device());
  const ref::BaGatesRefShape shapes[] = {
      {1, 64, 2048, 2048, 64, 32, 2},    // Qwen3-Next-80B at one token: 11 columns, the last of 4 outputs
      {70, 96, 1024, 1040, 101, 48, 3},  // two token tiles (6 tokens in the second), padded rows and gate row
      {3, 42, 1000, 1016, 45, 21, 7},    // K = 1000: 125 vectors, ragged over the split
      {2, 128, 8, 8, 128, 64, 64},       // K = 8: one vector; no split
      {17, 96, 5120, 5128, 96, 48, 48},  // the stacked [b; a] layout
  };
  std::uint64_t seed = 8200;
  for (const ref::BaGatesRefShape& s : shapes) {
    check_splitk(*runtime, BaCase::normal(s, seed += 10));
  }
}

TEST_CASE("BA gates at decode sizes (host): the same bytes on every run, the parent's with a split of 2 at K=512",
          "[kernels][ba_gates_splitk]") {
  auto runtime = Runtime::open(kernels_test::runtime_options(BackendChoice::kHost, 132));
  REQUIRE(runtime->has_device());
  // Uniform inputs: summation order shows in the low bits.
  const BaCase c({9, 96, 512, 512, 96, 48, 3}, 8300);
  const ops::BaGatesArgs args{{}, {}, {}, {}, {}, 9, 96, 512, 512, 96, 48, 3};
  REQUIRE(ops::ba_gates_splitk_cluster(*runtime->backend(), ops::ba_gates_kernels(*runtime).splitk_params, args) == 2);
  const std::vector<float> first = kernels_test::run_ba(*runtime, c, BaRun::kSplitK).out;
  const std::vector<float> second = kernels_test::run_ba(*runtime, c, BaRun::kSplitK).out;
  CHECK(std::memcmp(first.data(), second.data(), first.size() * sizeof(float)) == 0);
  // Rank r's lane l takes vector 32 r + l, as the parent's lane 32 r + l: the same products, the
  // same warp sums, rank 0 + rank 1 as warp_even + warp_odd.
  const std::vector<float> parent = kernels_test::run_ba(*runtime, c, BaRun::kParent).out;
  CHECK(std::memcmp(first.data(), parent.data(), first.size() * sizeof(float)) == 0);
  // At K = 5120 (8 ranks of 80 vectors) the order differs and so do some bytes; the bound holds.
  const BaCase wide({4, 96, 5120, 5120, 96, 48, 3}, 8310);
  const std::vector<float> split = kernels_test::run_ba(*runtime, wide, BaRun::kSplitK).out;
  const std::vector<float> wide_parent = kernels_test::run_ba(*runtime, wide, BaRun::kParent).out;
  CHECK(std::memcmp(split.data(), wide_parent.data(), split.size() * sizeof(float)) != 0);
  CHECK(kernels_test::ba_worst_relative_gap(wide.shape, split, wide_parent) < 1e-3);
}

TEST_CASE("the op runs the decode kernel at M <= 64 on hopper and the seeds' pick past it or with the lever off",
          "[kernels][ba_gates_splitk]") {
  auto runtime = Runtime::open(kernels_test::runtime_options(BackendChoice::kHost, 132));
  REQUIRE(runtime->has_device());
  for (const std::uint32_t m : {1U, 64U}) {
    const BaCase c = BaCase::normal({m, 96, 5120, 5120, 96, 48, 3}, 8400 + m);
    const kernels_test::BaResult run = kernels_test::run_ba(*runtime, c, BaRun::kOp);
    REQUIRE(run.pick);
    CHECK(run.pick->decode);
    CHECK(run.pick->kernel == ops::ba_gates_kernels(*runtime).splitk);
    CHECK(kernels_test::ba_relative_frobenius_error(c.shape, run.out, c.oracle()) <
          metrale::check::kBaGatesMmaMaxRelativeFrobenius);
  }
  const BaCase past({65, 96, 512, 512, 96, 48, 3}, 8500);
  const kernels_test::BaResult run = kernels_test::run_ba(*runtime, past, BaRun::kOp);
  REQUIRE(run.pick);
  CHECK_FALSE(run.pick->decode);
  CHECK(run.pick->decode_reject == ops::kBaGatesDecodeTooManyTokens);
  CHECK(run.pick->kernel == ops::ba_gates_kernels(*runtime).parent);

  RuntimeOptions off = kernels_test::runtime_options(BackendChoice::kHost, 132);
  off.env = [](const char* name) -> std::optional<std::string> {
    return std::string_view(name) == "METRALE_SSM_BA_GATES_DECODE" ? std::optional<std::string>("0") : std::nullopt;
  };
  auto without = Runtime::open(off);
  const BaCase one = BaCase::normal({1, 96, 5120, 5120, 96, 48, 3}, 8600);
  const kernels_test::BaResult seeds = kernels_test::run_ba(*without, one, BaRun::kOp);
  REQUIRE(seeds.pick);
  CHECK_FALSE(seeds.pick->decode);
  CHECK(seeds.pick->decode_reject == ops::kBaGatesDecodeRejects[0]);
  CHECK(seeds.pick->kernel == ops::ba_gates_kernels(*without).parent);
  // The parent's bytes are the kernel-order reference's on the host.
  const std::vector<float> expected = one.reference();
  CHECK(std::memcmp(seeds.out.data(), expected.data(), expected.size() * sizeof(float)) == 0);
}
