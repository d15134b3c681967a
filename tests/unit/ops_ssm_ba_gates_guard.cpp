// ops_ssm_ba_gates_guard.cpp: the BA-gates twin's constants, guard, pick, log slots and index
// mappings, pinned to the seed's numbers.
#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "ops/ssm_ba_gates_guard.hpp"
#include "ops/ssm_ba_gates_mapping.hpp"
#include "unit/ops_recording_gpu.hpp"

using namespace metrale;
using namespace metrale::ops;

namespace {

constexpr KernelHandle kParent{11};
constexpr KernelHandle kTwin{22};

std::optional<std::string_view> reject_at(std::uint32_t m, std::uint32_t n = 96, std::uint32_t k = 5120,
                                          std::uint32_t k_stride = 5120, bool requested = true, bool present = true,
                                          std::uint32_t sms = 132) {
  return ssm_ba_gates_hopper_reject(requested, present, m, n, k, k_stride, sms);
}

}  // namespace

TEST_CASE("BA gates constants follow the seed", "[ops][ba_gates]") {
  CHECK(kBaGatesBlock == 256);
  CHECK(kBaGatesLanes == 64);
  CHECK(kBaGatesOuts == 4);
  CHECK(kBaGatesWarps == 8);
  CHECK(kBaGatesGroups == 8);
  CHECK(kBaGatesMinCtasPerSm == 2);
  CHECK(kBaGatesFallbackSmCount == 132);
  CHECK(kBaGatesLogSlots == 7);
}

TEST_CASE("the twin reads the activation row 12 times at N = 96", "[ops][ba_gates]") {
  CHECK(ba_gates_twin_row_reads(96, kBaGatesOuts, kBaGatesGroups) == 12);
  CHECK(ba_gates_twin_row_reads(64, kBaGatesOuts, kBaGatesGroups) == 8);
  CHECK(ba_gates_twin_row_reads(128, kBaGatesOuts, kBaGatesGroups) == 16);
  CHECK(ba_gates_twin_row_reads(4, kBaGatesOuts, kBaGatesGroups) == 4);
}

TEST_CASE("the twin needs 264 tokens at 132 SMs", "[ops][ba_gates]") {
  CHECK(ba_gates_min_tokens(132) == 264);
  CHECK(ba_gates_min_tokens(148) == 296);
  CHECK(ba_gates_min_tokens(0) == 2);
  CHECK(ba_gates_min_tokens(std::numeric_limits<std::uint32_t>::max()) == std::numeric_limits<std::uint32_t>::max());
  CHECK(reject_at(263) == kBaGatesTooFewTokens);
  CHECK_FALSE(reject_at(264).has_value());
  CHECK_FALSE(reject_at(265).has_value());
}

TEST_CASE("every BA guard reason fires at its boundary", "[ops][ba_gates]") {
  CHECK(reject_at(4096, 96, 5120, 5120, false) == kBaGatesRejects[0]);
  CHECK(reject_at(4096, 96, 5120, 5120, true, false) == kBaGatesRejects[1]);
  CHECK(reject_at(4096, 0) == kBaGatesRejects[2]);
  CHECK(reject_at(4096, 96, 0, 0) == kBaGatesRejects[2]);
  CHECK(reject_at(4096, 1) == std::nullopt);
  CHECK(reject_at(4096, 96, 5124, 5128) == kBaGatesRejects[3]);
  CHECK(reject_at(4096, 96, 8, 8) == std::nullopt);
  CHECK(reject_at(4096, 96, 5120, 5119) == kBaGatesRejects[4]);
  CHECK(reject_at(4096, 96, 5120, 5120) == std::nullopt);
  CHECK(reject_at(1, 96, 5120, 5120, true, true, 0) == kBaGatesTooFewTokens);
  CHECK(reject_at(2, 96, 5120, 5120, true, true, 0) == std::nullopt);
}

TEST_CASE("BA guard reasons come in the seed's order when several apply", "[ops][ba_gates]") {
  // Everything wrong at once: each earlier reason hides the later ones.
  CHECK(reject_at(1, 0, 4, 0, false, false) == kBaGatesRejects[0]);
  CHECK(reject_at(1, 0, 4, 0, true, false) == kBaGatesRejects[1]);
  CHECK(reject_at(1, 0, 4, 0, true, true) == kBaGatesRejects[2]);
  CHECK(reject_at(1, 96, 4, 0, true, true) == kBaGatesRejects[3]);
  CHECK(reject_at(1, 96, 8, 0, true, true) == kBaGatesRejects[4]);
  CHECK(reject_at(1, 96, 8, 8, true, true) == kBaGatesRejects[5]);
  CHECK(kBaGatesRejects[0] == "not requested");
  CHECK(kBaGatesRejects[1] == "kernel absent from this image (kernels/hopper only)");
  CHECK(kBaGatesRejects[2] == "empty BA projection");
  CHECK(kBaGatesRejects[3] == "K is not a multiple of 8 (the uint4 K sweep would drop a tail)");
  CHECK(kBaGatesRejects[4] == "K_stride < K: the activation row is shorter than the reduction");
  CHECK(kBaGatesRejects[5] == "too few tokens to fill the device at one CTA per token");
}

TEST_CASE("ba_gates_pick returns the twin exactly when the guard says none", "[ops][ba_gates]") {
  int twins = 0;
  int parents = 0;
  for (bool requested : {false, true}) {
    for (KernelHandle twin : {KernelHandle{}, kTwin}) {
      for (std::uint32_t m : {0u, 1u, 263u, 264u, 265u, 4096u}) {
        for (std::uint32_t n : {0u, 64u, 96u}) {
          for (std::uint32_t k : {0u, 4u, 2048u, 5120u}) {
            for (std::uint32_t k_stride : {k == 0 ? 0u : k - 1, k, k + 8}) {
              for (std::uint32_t sms : {0u, 1u, 132u, 148u}) {
                const auto reject = ssm_ba_gates_hopper_reject(requested, twin.present(), m, n, k, k_stride, sms);
                const BaGatesPick pick = ba_gates_pick(requested, kParent, twin, m, n, k, k_stride, sms);
                REQUIRE(pick.reject == reject);
                REQUIRE(pick.twin == !reject.has_value());
                REQUIRE(pick.kernel == (pick.twin ? twin : kParent));
                (pick.twin ? twins : parents) += 1;
              }
            }
          }
        }
      }
    }
  }
  CHECK(twins > 0);
  CHECK(parents > 0);
}

TEST_CASE("every BA reject reason has its own log slot", "[ops][ba_gates]") {
  std::set<std::size_t> flags;
  for (std::size_t i = 0; i < kBaGatesRejects.size(); ++i) {
    const BaGatesPick pick{kParent, false, kBaGatesRejects[i]};
    const auto slot = ba_gates_log_slot(pick, true);
    REQUIRE(slot.has_value());
    CHECK_FALSE(slot->twin);
    CHECK(slot->reject_index == i);
    flags.insert(slot->flag_index(kBaGatesRejects.size()));
  }
  const auto twin_slot = ba_gates_log_slot(BaGatesPick{kTwin, true, std::nullopt}, true);
  REQUIRE(twin_slot.has_value());
  CHECK(twin_slot->twin);
  flags.insert(twin_slot->flag_index(kBaGatesRejects.size()));
  CHECK(flags.size() == kBaGatesLogSlots);
  CHECK(*flags.rbegin() == kBaGatesLogSlots - 1);
  // A reason the guard never returns has no slot.
  CHECK_FALSE(ba_gates_log_slot(BaGatesPick{kParent, false, "something else"}, true).has_value());
}

TEST_CASE("replayed BA call sequences log each outcome once", "[ops][ba_gates]") {
  const auto run = [](OnceSlots& said, bool requested, std::uint32_t m) {
    const BaGatesPick pick = ba_gates_pick(requested, kParent, kTwin, m, 96, 5120, 5120, 132);
    return ba_gates_log_line(pick, requested, m, said);
  };
  SECTION("the lever off logs nothing") {
    OnceSlots said(kBaGatesLogSlots);
    for (std::uint32_t m : {1u, 263u, 264u, 4096u}) {
      CHECK_FALSE(run(said, false, m).has_value());
    }
  }
  SECTION("small then large M logs both slots, each naming the M first reached") {
    OnceSlots said(kBaGatesLogSlots);
    const auto small = run(said, true, 7);
    REQUIRE(small.has_value());
    CHECK_THAT(*small, Catch::Contains("NOT running at M=7") && Catch::Contains(std::string(kBaGatesTooFewTokens)));
    CHECK_FALSE(run(said, true, 9).has_value());
    const auto large = run(said, true, 300);
    REQUIRE(large.has_value());
    CHECK_THAT(*large, Catch::Contains("dense_gemm_ba_gates_prefill_hopper") && Catch::Contains("M=300"));
    CHECK_FALSE(run(said, true, 400).has_value());
    CHECK_FALSE(run(said, true, 3).has_value());
  }
  SECTION("large then small M also logs both") {
    OnceSlots said(kBaGatesLogSlots);
    CHECK(run(said, true, 4096).has_value());
    CHECK(run(said, true, 1).has_value());
  }
}

TEST_CASE("BA SM count falls back to 132 and is at least 1", "[ops][ba_gates]") {
  CHECK(ba_gates_sm_count(test::RecordingGpu(std::nullopt)) == 132);
  CHECK(ba_gates_sm_count(test::RecordingGpu(0u)) == 1);
  CHECK(ba_gates_sm_count(test::RecordingGpu(148u)) == 148);
}

TEST_CASE("BA index mappings match the kernels' layout", "[ops][ba_gates]") {
  const std::vector<std::uint32_t> lane0 = ba_gates_lane_kv(0, 640);
  REQUIRE(lane0.size() == 10);
  CHECK(lane0.front() == 0);
  CHECK(lane0[1] == 64);
  CHECK(ba_gates_lane_kv(63, 640).back() == 639);
  CHECK(ba_gates_lane_kv(10, 10).empty());
  CHECK(ba_gates_lane_kv(5, 70) == std::vector<std::uint32_t>{5, 69});
  // Every kv is swept by exactly one lane.
  std::vector<int> seen(640, 0);
  for (std::uint32_t lane = 0; lane < kBaGatesLanes; ++lane) {
    for (std::uint32_t kv : ba_gates_lane_kv(lane, 640)) {
      ++seen[kv];
    }
  }
  CHECK(std::count(seen.begin(), seen.end(), 1) == 640);

  for (std::uint32_t thread = 0; thread < kBaGatesBlock; ++thread) {
    const std::uint32_t local_out = thread / kBaGatesLanes;
    const std::uint32_t lane = thread % kBaGatesLanes;
    REQUIRE(ba_gates_warp(local_out, lane) == thread / 32);
  }
  CHECK(ba_gates_cross_warp_pair(0) == std::pair<std::uint32_t, std::uint32_t>{0, 1});
  CHECK(ba_gates_cross_warp_pair(3) == std::pair<std::uint32_t, std::uint32_t>{6, 7});
  CHECK(ba_gates_output(0, 3) == 3);
  CHECK(ba_gates_output(23, 3) == 95);

  // Qwen3.5: vheads_per_group = 3, outputs 0..2 beta, 3..5 gate, then the next group.
  CHECK(ba_gates_slot(0, 3) == BaGatesSlot{true, 0});
  CHECK(ba_gates_slot(2, 3) == BaGatesSlot{true, 2});
  CHECK(ba_gates_slot(3, 3) == BaGatesSlot{false, 0});
  CHECK(ba_gates_slot(5, 3) == BaGatesSlot{false, 2});
  CHECK(ba_gates_slot(6, 3) == BaGatesSlot{true, 3});
  CHECK(ba_gates_slot(95, 3) == BaGatesSlot{false, 47});
  CHECK(ba_gates_slot(95, 3).column(48) == 47);
  CHECK(ba_gates_slot(0, 3).column(48) == 48);
  // Each column of the [gate(nv), beta(nv)] row is written exactly once.
  for (std::uint32_t nv : {32u, 48u}) {
    for (std::uint32_t vhpg : {1u, 2u, 3u, nv}) {
      if (nv % vhpg != 0) {
        continue;
      }
      std::vector<int> hits(2 * nv, 0);
      for (std::uint32_t n = 0; n < 2 * nv; ++n) {
        ++hits.at(ba_gates_slot(n, vhpg).column(nv));
      }
      INFO("nv=" << nv << " vheads_per_group=" << vhpg);
      CHECK(std::count(hits.begin(), hits.end(), 1) == static_cast<long>(2 * nv));
    }
  }
}
