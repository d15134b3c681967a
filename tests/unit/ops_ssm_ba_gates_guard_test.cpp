// ops_ssm_ba_gates_guard_test.cpp: the BA-gates twin's constants, guard, pick, log slots and index
// mappings, pinned to the seed's numbers.
#include <array>
#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ops/op_verdict.hpp"
#include "ops/ssm_ba_gates/ssm_ba_gates.hpp"
#include "support/ops_recording_gpu.hpp"

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

namespace {

// The seed's reason strings (000_*.txt, ssm_ba_gates_hopper_reject), spelled here rather than
// read from kBaGatesRejects, so a changed string or order fails.
constexpr std::string_view kNotRequested = "not requested";
constexpr std::string_view kAbsent = "kernel absent from this image (kernels/hopper only)";
constexpr std::string_view kEmpty = "empty BA projection";
constexpr std::string_view kKTail = "K is not a multiple of 8 (the uint4 K sweep would drop a tail)";
constexpr std::string_view kShortRow = "K_stride < K: the activation row is shorter than the reduction";
constexpr std::string_view kTooFew = "too few tokens to fill the device at one CTA per token";
constexpr std::string_view kTwinRuns = "";

struct BaGuardRow {
  bool requested;
  bool twin_present;
  std::uint32_t m, n, k, k_stride, sms;
  std::string_view expected;  // kTwinRuns: the twin takes the launch
};

// Inputs -> outcome, from the seed's guard: the order of the tests, the 2 x sm_count token floor
// (sm_count 0 counts as 1), and the Qwen3.5-27B (N 96, K 5120) and Qwen3-Next (N 64, K 2048) shapes.
constexpr BaGuardRow kBaGuardTable[] = {
    {false, true, 4096, 96, 5120, 5120, 132, kNotRequested},
    {true, false, 4096, 96, 5120, 5120, 132, kAbsent},
    {true, true, 4096, 0, 5120, 5120, 132, kEmpty},
    {true, true, 4096, 96, 0, 0, 132, kEmpty},
    {true, true, 4096, 96, 5124, 5128, 132, kKTail},
    {true, true, 4096, 96, 5120, 5119, 132, kShortRow},
    {true, true, 4096, 96, 5120, 5120, 132, kTwinRuns},
    {true, true, 4096, 96, 8, 8, 132, kTwinRuns},
    {true, true, 4096, 1, 5120, 5120, 132, kTwinRuns},  // the guard does not check N's parity (the op does)
    {true, true, 263, 96, 5120, 5120, 132, kTooFew},
    {true, true, 264, 96, 5120, 5120, 132, kTwinRuns},
    {true, true, 265, 96, 5120, 5120, 132, kTwinRuns},
    {true, true, 295, 96, 5120, 5120, 148, kTooFew},
    {true, true, 296, 96, 5120, 5120, 148, kTwinRuns},
    {true, true, 95, 64, 2048, 2048, 48, kTooFew},
    {true, true, 96, 64, 2048, 2048, 48, kTwinRuns},
    {true, true, 1, 96, 5120, 5120, 0, kTooFew},
    {true, true, 2, 96, 5120, 5120, 0, kTwinRuns},
    {true, true, 4096, 96, 5120, 6144, 132, kTwinRuns},  // a padded row
    // Everything wrong at once: each earlier reason hides the later ones.
    {false, false, 1, 0, 4, 0, 132, kNotRequested},
    {true, false, 1, 0, 4, 0, 132, kAbsent},
    {true, true, 1, 0, 4, 0, 132, kEmpty},
    {true, true, 1, 96, 4, 0, 132, kKTail},
    {true, true, 1, 96, 8, 0, 132, kShortRow},
    {true, true, 1, 96, 8, 8, 132, kTooFew},
    {false, true, 1, 96, 8, 8, 132, kNotRequested},
};

}  // namespace

TEST_CASE("the BA guard and pick follow the seed's table of inputs and outcomes", "[ops][ba_gates]") {
  for (const BaGuardRow& row : kBaGuardTable) {
    INFO("requested=" << row.requested << " twin=" << row.twin_present << " M=" << row.m << " N=" << row.n
                      << " K=" << row.k << " K_stride=" << row.k_stride << " sms=" << row.sms);
    const auto reject =
        ssm_ba_gates_hopper_reject(row.requested, row.twin_present, row.m, row.n, row.k, row.k_stride, row.sms);
    const BaGatesPick pick = ba_gates_pick(row.requested, kParent, row.twin_present ? kTwin : KernelHandle{}, row.m,
                                           row.n, row.k, row.k_stride, row.sms);
    if (row.expected == kTwinRuns) {
      CHECK_FALSE(reject.has_value());
      CHECK(pick.twin);
      CHECK(pick.kernel == kTwin);
      CHECK_FALSE(pick.reject.has_value());
    } else {
      CHECK(reject == row.expected);
      CHECK_FALSE(pick.twin);
      CHECK(pick.kernel == kParent);
      CHECK(pick.reject == row.expected);
    }
  }
}

TEST_CASE("the BA reasons are listed in the order the seed tests them", "[ops][ba_gates]") {
  // The log slots are indexed by this list, so its order is part of the contract.
  const std::vector<std::string_view> seed_order{kNotRequested, kAbsent, kEmpty, kKTail, kShortRow, kTooFew};
  CHECK(std::vector<std::string_view>(kBaGatesRejects.begin(), kBaGatesRejects.end()) == seed_order);
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

TEST_CASE("the SM count a guard sees: the device's, else the given fallback, at least 1", "[ops][ba_gates]") {
  CHECK(device_sm_count(test::RecordingGpu(std::nullopt), 48) == 48);
  CHECK(device_sm_count(test::RecordingGpu(std::nullopt), 0) == 1);
  CHECK(device_sm_count(test::RecordingGpu(0u), 48) == 1);
  CHECK(device_sm_count(test::RecordingGpu(148u), 48) == 148);
}

TEST_CASE("both ops' floors are one formula: 2 CTAs per SM, saturating", "[ops][ba_gates][fp8]") {
  const std::pair<std::uint32_t, std::uint32_t> table[] = {
      {0, 2}, {1, 2}, {48, 96}, {132, 264}, {148, 296}, {std::numeric_limits<std::uint32_t>::max(), 0xFFFFFFFFu}};
  for (const auto& [sms, ctas] : table) {
    INFO("sm_count " << sms);
    CHECK(min_ctas(sms) == ctas);
    CHECK(ba_gates_min_tokens(sms) == ctas);
  }
}

TEST_CASE("one log-slot rule for both ops", "[ops][ba_gates][fp8]") {
  constexpr std::array<std::string_view, 2> kReasons{"first", "second"};
  CHECK(op_log_slot(std::nullopt, false, kReasons) == OpLogSlot{true, 0});
  CHECK(op_log_slot(std::nullopt, true, kReasons) == OpLogSlot{true, 0});
  CHECK(op_log_slot("second", true, kReasons) == OpLogSlot{false, 1});
  CHECK_FALSE(op_log_slot("second", false, kReasons).has_value());
  CHECK_FALSE(op_log_slot("other", true, kReasons).has_value());
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
