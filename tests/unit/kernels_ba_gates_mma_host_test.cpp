// kernels_ba_gates_mma_host_test.cpp: the tensor-core BA-gates kernel (src/ops/ssm_ba_gates/
// ssm_ba_gates_mma.cuh) on the host backend, where its wmma calls run as whole-tile warp
// collectives: against the float64 oracle (relative Frobenius error < 1e-5 with N(0,1)
// activations and 0.02 N(0,1) weights) at the Qwen3.5-27B shape and at odd ones (M not a multiple
// of the tile, K not a multiple of the 64-element chunk, partial output tiles, padded rows, the
// Qwen3-Next and stacked layouts); every output written, nothing past the last token or the
// gate row; one MMA counted per 16x16x16 tile; the op picks it exactly when its guard says none.
#include <catch2/catch.hpp>
#include <cstring>
#include <sstream>
#include <string>

#include "metrale/host/thread_context.hpp"
#include "ops/ssm_ba_gates/ssm_ba_gates.hpp"
#include "support/kernels_support.hpp"

using namespace metrale;
using kernels_test::BaCase;
using kernels_test::BaRun;
using kernels_test::describe;

namespace {

// The MMAs the kernel issues: per token tile of 16, per 16 K (rounded up to the 64-element
// chunk), per output tile of 16, whatever the K split (its CTAs share a tile's chunks).
std::uint64_t expected_mmas(const ref::BaGatesRefShape& s, std::uint32_t tokens) {
  const std::uint64_t blocks = (s.m + tokens - 1) / tokens;
  const std::uint64_t token_tiles = blocks * (tokens / 16);
  const std::uint64_t k_steps = (s.k + 63) / 64 * 4;
  const std::uint64_t out_tiles = (s.n + 15) / 16;
  return token_tiles * k_steps * out_tiles;
}

std::vector<float> check_mma(Runtime& runtime, const BaCase& c) {
  INFO(describe(c.shape));
  const std::uint64_t before = host::tile_mma_count();
  const kernels_test::BaResult run = kernels_test::run_ba(runtime, c, BaRun::kMma);
  CHECK(host::tile_mma_count() - before == expected_mmas(c.shape, ops::ba_gates_kernels(runtime).mma_params.lanes));
  const kernels_test::BaCoverage coverage = kernels_test::ba_coverage(c.shape, run.out);
  CHECK(coverage.unwritten == 0);
  CHECK(coverage.padding_written == 0);
  CHECK(run.guard_written == 0);
  const double error = kernels_test::ba_relative_frobenius_error(c.shape, run.out, c.oracle());
  INFO("relative Frobenius error against the float64 oracle: " << error);
  CHECK(error < metrale::check::kBaGatesMmaMaxRelativeFrobenius);
  return run.out;
}

}  // namespace

TEST_CASE("BA gates on tensor cores (host): Qwen3.5-27B shape M=264 K=5120 N=96 within 1e-5 of the oracle",
          "[kernels][ba_gates_mma][slow]") {
  auto runtime = Runtime::open(kernels_test::runtime_options(BackendChoice::kHost, 132));
  REQUIRE(runtime->has_device());
  REQUIRE(ops::ba_gates_kernels(*runtime).mma.present());
  // 264 = 4 x 64 + 8: the last block owns 8 tokens.
  check_mma(*runtime, BaCase::normal({264, 96, 5120, 5120, 96, 48, 3}, 7000));
}

TEST_CASE("BA gates on tensor cores (host): odd shapes within 1e-5 of the oracle, every output written once",
          "[kernels][ba_gates_mma]") {
  auto runtime = Runtime::open(kernels_test::runtime_options(BackendChoice::kHost, 132));
  REQUIRE(runtime->has_device());
  const ref::BaGatesRefShape shapes[] = {
      {70, 64, 2048, 2048, 64, 32, 2},     // Qwen3-Next-80B, a second block of 6 tokens
      {1, 96, 5120, 5120, 96, 48, 3},      // one token at the real K
      {17, 128, 1024, 1024, 128, 64, 64},  // stacked [b; a], N = 128: every output tile
      {33, 96, 1024, 1040, 96, 48, 48},    // stacked [b; a], N = 96, padded rows
      {65, 96, 1000, 1016, 101, 48, 3},    // K % 64 == 40: a zero-filled chunk tail; padded output
      {20, 42, 520, 536, 45, 21, 7},       // N = 42: a partial output tile
      {3, 40, 8, 8, 40, 20, 5},            // K = 8: one vector, one stage
      {128, 96, 256, 264, 99, 48, 3},      // two whole blocks
  };
  std::uint64_t seed = 7100;
  for (const ref::BaGatesRefShape& s : shapes) {
    check_mma(*runtime, BaCase::normal(s, seed += 10));
  }
}

TEST_CASE("BA gates on tensor cores (host): K split over clusters of 1 to 8 CTAs within 1e-5 of the oracle",
          "[kernels][ba_gates_mma]") {
  // The device's SM count sets the split (ops::ba_gates_mma_cluster_blocks): 3 tiles of 128 on
  // 24 SMs run as clusters of 8, on 12 of 4, on 6 of 2, on 3 of 1. Each split sums the same
  // products in another order, so the outputs differ in their last bits but stay within the
  // oracle's bound, and a split run twice gives the same bytes (the ranks are summed in order).
  const ref::BaGatesRefShape shapes[] = {
      {264, 96, 1024, 1024, 96, 48, 3},   // 16 chunks: 2 per CTA at 8 (K 5120 at 8: the Qwen test above)
      {300, 96, 1000, 1016, 101, 48, 3},  // 16 chunks, the last partial: 2 per CTA at 8
      {260, 40, 320, 320, 40, 20, 5},     // 5 chunks: at most 4 ways, one CTA gets 2
  };
  std::uint64_t seed = 7700;
  for (const ref::BaGatesRefShape& s : shapes) {
    const BaCase c = BaCase::normal(s, seed += 10);
    std::vector<std::vector<float>> outs;
    for (const std::uint32_t sms : {24u, 12u, 6u, 3u}) {
      auto runtime = Runtime::open(kernels_test::runtime_options(BackendChoice::kHost, sms));
      REQUIRE(ops::ba_gates_kernels(*runtime).mma_params == KernelParams{256, 128, 6});
      const std::uint32_t chunks = (s.k + 63) / 64;
      const std::uint32_t want = std::min(std::min(sms / 3, 8u), chunks >= 4 ? (chunks >= 8 ? 8u : 4u) : chunks);
      INFO("SMs " << sms);
      ops::BaGatesArgs args;
      args.m = s.m;
      args.k = s.k;
      CHECK(ops::ba_gates_mma_cluster(*runtime->backend(), ops::ba_gates_kernels(*runtime).mma_params, args) == want);
      outs.push_back(check_mma(*runtime, c));
      if (sms == 24) {
        const std::vector<float> again = check_mma(*runtime, c);
        CHECK(std::memcmp(again.data(), outs.back().data(), again.size() * sizeof(float)) == 0);
      }
    }
    // The splits really ran differently: clusters of 8 and no cluster do not agree to the bit.
    CHECK(std::memcmp(outs.front().data(), outs.back().data(), outs.front().size() * sizeof(float)) != 0);
  }
}

TEST_CASE("BA gates on tensor cores (host): gb10's 3-stage ring within 1e-5 of the oracle", "[kernels][ba_gates_mma]") {
  // Fewer stages than chunks and more: the ring wraps many times at K 5120 and not at all at K 64.
  auto runtime = Runtime::open(metrale::test::isolated_runtime_options(BackendChoice::kHost, 48, "gb10"));
  REQUIRE(runtime->has_device());
  REQUIRE(ops::ba_gates_kernels(*runtime).mma_params == KernelParams{256, 64, 3});
  const ref::BaGatesRefShape shapes[] = {
      {70, 96, 5120, 5120, 96, 48, 3},   // 80 chunks through 3 stages
      {33, 128, 200, 208, 128, 64, 64},  // 4 chunks, the last one partial; N = 128
      {17, 40, 64, 64, 40, 20, 5},       // one chunk: the ring's other stages stay empty
  };
  std::uint64_t seed = 7500;
  for (const ref::BaGatesRefShape& s : shapes) {
    check_mma(*runtime, BaCase::normal(s, seed += 10));
  }
}

TEST_CASE("BA gates on tensor cores (host): the op runs ssm_ba_gates_mma exactly when its guard says none",
          "[kernels][ba_gates_mma]") {
  // sm_count 2: the tensor-core kernel takes M >= 128 (one tile, split in two), the twin M >= 4.
  auto runtime = Runtime::open(kernels_test::runtime_options(BackendChoice::kHost, 2));
  REQUIRE(runtime->levers().on("ssm_ba_gates_tensor_core"));
  REQUIRE(ops::ba_gates_mma_min_tokens(2, 128, 8) == 128);
  for (const std::uint32_t m : {127u, 128u, 260u}) {
    const BaCase c = BaCase::normal({m, 96, 512, 512, 96, 48, 3}, 7300 + m);
    INFO("M=" << m);
    const kernels_test::BaResult op = kernels_test::run_ba(*runtime, c, BaRun::kOp);
    REQUIRE(op.pick.has_value());
    CHECK(op.pick->mma == (m >= 128));
    CHECK(op.pick->twin == (m < 128));
    CHECK(op.pick->mma_reject == (m >= 128 ? std::nullopt : std::optional(ops::kBaGatesMmaTooFewTokens)));
    const kernels_test::BaResult forced = kernels_test::run_ba(*runtime, c, m >= 128 ? BaRun::kMma : BaRun::kTwin);
    CHECK(std::memcmp(op.out.data(), forced.out.data(), op.out.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("BA gates on tensor cores (host): the lever off leaves every pick to the seeds' twin guard",
          "[kernels][ba_gates_mma]") {
  auto runtime = Runtime::open(kernels_test::runtime_options_seeds_only(BackendChoice::kHost, 2));
  REQUIRE_FALSE(runtime->levers().on("ssm_ba_gates_tensor_core"));
  REQUIRE(ops::ba_gates_kernels(*runtime).mma.present());
  for (const std::uint32_t m : {3u, 64u, 130u}) {
    const BaCase c({m, 96, 512, 512, 96, 48, 3}, 7400 + m);
    const kernels_test::BaResult op = kernels_test::run_ba(*runtime, c, BaRun::kOp);
    REQUIRE(op.pick.has_value());
    const ops::BaGatesKernels k = ops::ba_gates_kernels(*runtime);
    const ops::BaGatesPick seeds = ops::ba_gates_pick(true, k.parent, k.twin, m, 96, 512, 512, 2);
    CHECK_FALSE(op.pick->mma);
    CHECK(op.pick->twin == seeds.twin);
    CHECK(op.pick->reject == seeds.reject);
    CHECK(op.pick->kernel == seeds.kernel);
    CHECK(op.pick->mma_reject == std::optional(ops::kBaGatesMmaRejects[0]));
  }
}
