// kernels_ba_gates_host_test.cpp: the BA-gates parent and Hopper twin from src/ops/ssm_ba_gates/, run
// through the runtime on the host backend at the real Qwen3.5 shape and at odd ones: twin and
// parent bytes equal, both equal to the kernel-order reference bit for bit, within 1e-5 of the
// float64 oracle, every output written and padding columns untouched; the op's pick runs the
// kernel the guard names. The real shape takes a few seconds (tagged [slow], not hidden).
#include <catch2/catch.hpp>
#include <sstream>

#include "ops/ssm_ba_gates/ssm_ba_gates.hpp"
#include "support/kernels_support.hpp"

using namespace metrale;
using kernels_test::BaCase;
using kernels_test::BaRun;
using kernels_test::describe;

namespace {

// Forced parent and twin against each other, the reference and the oracle; returns the twin's.
std::vector<float> check_forced_pair(Runtime& runtime, const BaCase& c) {
  INFO(describe(c.shape));
  const std::vector<float> parent = kernels_test::run_ba(runtime, c, BaRun::kParent).out;
  const std::vector<float> twin = kernels_test::run_ba(runtime, c, BaRun::kTwin).out;
  const kernels_test::BaCoverage parent_coverage = kernels_test::ba_coverage(c.shape, parent);
  const kernels_test::BaCoverage twin_coverage = kernels_test::ba_coverage(c.shape, twin);
  CHECK(parent_coverage.unwritten == 0);
  CHECK(twin_coverage.unwritten == 0);
  CHECK(parent_coverage.padding_written == 0);
  CHECK(twin_coverage.padding_written == 0);
  CHECK(kernels_test::same_bits(twin, parent));
  CHECK(kernels_test::same_bits(twin, c.reference()));  // poisoned padding included: the reference skips it too
  const double worst = kernels_test::ba_worst_relative_error(c.shape, twin, c.oracle());
  INFO("worst relative error against the float64 oracle: " << worst);
  CHECK(worst < 1e-5);
  return twin;
}

}  // namespace

TEST_CASE("BA gates on the host: Qwen3.5-27B shape M=264 K=5120 N=96, twin == parent == reference",
          "[kernels][ba_gates][slow]") {
  auto runtime = Runtime::open(kernels_test::runtime_options_seeds_only(BackendChoice::kHost, 132));
  REQUIRE(runtime->has_device());
  const ops::BaGatesKernels kernels = ops::ba_gates_kernels(*runtime);
  REQUIRE(kernels.parent.present());
  REQUIRE(kernels.twin.present());
  // At 132 SMs the op itself would pick the twin at exactly this M (the seed's 264 tokens).
  CHECK(ops::ba_gates_pick(true, kernels.parent, kernels.twin, 264, 96, 5120, 5120, 132).twin);
  check_forced_pair(*runtime, BaCase({264, 96, 5120, 5120, 96, 48, 3}, 1000));
}

TEST_CASE("BA gates on the host: odd shapes, twin == parent == reference, the op runs its pick",
          "[kernels][ba_gates]") {
  // sm_count 2: the twin takes M >= 4, so the table crosses the floor.
  auto runtime = Runtime::open(kernels_test::runtime_options_seeds_only(BackendChoice::kHost, 2));
  REQUIRE(runtime->has_device());
  REQUIRE(ops::ba_gates_min_tokens(2) == 4);
  const ref::BaGatesRefShape shapes[] = {
      {1, 96, 5120, 5120, 96, 48, 3},     // one token at the real K
      {2, 64, 2048, 2048, 64, 32, 2},     // Qwen3-Next-80B, below the floor
      {5, 64, 2048, 2048, 64, 32, 2},     // Qwen3-Next-80B, above it
      {3, 128, 1024, 1024, 128, 64, 64},  // stacked [b; a], N = 128
      {4, 96, 1024, 1024, 96, 48, 48},    // stacked [b; a], N = 96
      {3, 128, 2048, 2064, 130, 64, 2},   // N = 128, padded rows and padded output
      {6, 96, 1000, 1016, 101, 48, 3},    // K/8 = 125: lanes sweep unequal counts; padding
      {5, 42, 520, 536, 45, 21, 7},       // N/4 not whole: idle outputs in the last group
      {4, 40, 8, 8, 40, 20, 5},           // one 16-byte vector per row; 10 groups, 2 tiles
      {265, 96, 256, 264, 99, 48, 3},     // one token past the seed's floor, padded
  };
  std::uint64_t seed = 2000;
  for (const ref::BaGatesRefShape& s : shapes) {
    const BaCase c(s, seed += 10);
    const std::vector<float> twin = check_forced_pair(*runtime, c);
    const kernels_test::BaResult op = kernels_test::run_ba(*runtime, c, BaRun::kOp);
    INFO(describe(s));
    REQUIRE(op.pick.has_value());
    CHECK(op.pick->twin == (s.m >= 4));
    CHECK(op.pick->reject == (s.m >= 4 ? std::nullopt : std::optional(ops::kBaGatesTooFewTokens)));
    CHECK(kernels_test::same_bits(op.out, twin));
  }
}
