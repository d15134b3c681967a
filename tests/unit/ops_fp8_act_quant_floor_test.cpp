// ops_fp8_act_quant_floor_test.cpp: the FP8 twin's CTA floor, grid function, guard, pick and log
// slots, pinned to the seed's table.
#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "ops/fp8_act_quant/fp8_act_quant.hpp"

using namespace metrale;
using namespace metrale::ops;

namespace {

constexpr KernelHandle kShared{31};
constexpr KernelHandle kTwin{32};

Fp8QuantKernels both() { return Fp8QuantKernels{kShared, kTwin}; }

}  // namespace

TEST_CASE("the FP8 grid function gives both kernels' grids", "[ops][fp8]") {
  CHECK(fp8_quant_grid(true, 53, 5120) == Dim3{53, 5, 1});
  CHECK(fp8_quant_grid(true, 44, 6144) == Dim3{44, 6, 1});
  CHECK(fp8_quant_grid(true, 16, 17408) == Dim3{16, 17, 1});
  CHECK(fp8_quant_grid(true, 3, 1152) == Dim3{3, 2, 1});  // 9 groups: a ragged last CTA
  CHECK(fp8_quant_grid(false, 53, 5120, 1) == Dim3{53, 40, 1});
  CHECK(fp8_quant_grid(false, 2, 17408, 1) == Dim3{2, 136, 1});
  CHECK(fp8_quant_hopper_ctas(53, 5120) == 265);
  CHECK(fp8_quant_hopper_ctas(52, 5120) == 260);
}

TEST_CASE("the FP8 floor table at 132 SMs: 53, 44, 16", "[ops][fp8]") {
  CHECK(fp8_quant_hopper_min_m(5120, 132) == 53);
  CHECK(fp8_quant_hopper_min_m(6144, 132) == 44);
  CHECK(fp8_quant_hopper_min_m(17408, 132) == 16);
  for (std::uint32_t k : {5120u, 6144u, 17408u}) {
    const std::uint32_t min_m = fp8_quant_hopper_min_m(k, 132);
    INFO("K=" << k);
    CHECK(fp8_act_quant_hopper_reject(true, true, true, min_m - 1, k, 132) == kFp8QuantTooFewCtas);
    CHECK_FALSE(fp8_act_quant_hopper_reject(true, true, true, min_m, k, 132).has_value());
    CHECK(fp8_quant_hopper_ctas(min_m, k) >= fp8_quant_min_ctas(132));
    CHECK(fp8_quant_hopper_ctas(min_m - 1, k) < fp8_quant_min_ctas(132));
  }
}

namespace {

// The seed's reason strings (002_*.txt, FP8_QUANT_REJECTS), spelled here, not read from the code.
constexpr std::string_view kNotRequested = "not requested";
constexpr std::string_view kAbsent = "kernel absent from this image (kernels/hopper only)";
constexpr std::string_view kTooFew = "too few CTAs to fill the device at 8 K-groups per CTA";
constexpr std::string_view kTwinRuns = "";

struct Fp8GuardRow {
  bool requested;
  bool twin_present;
  bool shared_present;
  std::uint32_t m, k, sms;
  std::string_view expected;  // kTwinRuns: the twin takes the launch
  Dim3 grid;                  // of the kernel that runs: (M, ceil(K/128/8)) twin, (M, K/128) shared
};

// Inputs -> outcome from the seed's guard (absent twin; a lone twin runs whatever the lever and the
// floor say; the lever; the 2 x sm_count CTA floor) and its table: at 132 SMs the twin starts at
// M = 53 (K 5120), 44 (K 6144), 16 (K 17408).
constexpr Fp8GuardRow kFp8GuardTable[] = {
    {false, false, true, 1, 5120, 132, kAbsent, {1, 40, 1}},
    {true, false, true, 4096, 5120, 132, kAbsent, {4096, 40, 1}},
    {false, false, false, 4096, 5120, 132, kAbsent, {4096, 40, 1}},
    {false, true, false, 1, 5120, 132, kTwinRuns, {1, 5, 1}},
    {true, true, false, 1, 5120, 132, kTwinRuns, {1, 5, 1}},
    {false, true, true, 1, 5120, 132, kNotRequested, {1, 40, 1}},
    {false, true, true, 4096, 5120, 132, kNotRequested, {4096, 40, 1}},
    {true, true, true, 1, 5120, 132, kTooFew, {1, 40, 1}},
    {true, true, true, 52, 5120, 132, kTooFew, {52, 40, 1}},
    {true, true, true, 53, 5120, 132, kTwinRuns, {53, 5, 1}},
    {true, true, true, 43, 6144, 132, kTooFew, {43, 48, 1}},
    {true, true, true, 44, 6144, 132, kTwinRuns, {44, 6, 1}},
    {true, true, true, 15, 17408, 132, kTooFew, {15, 136, 1}},
    {true, true, true, 16, 17408, 132, kTwinRuns, {16, 17, 1}},
    {true, true, true, 4096, 5120, 132, kTwinRuns, {4096, 5, 1}},
    {true, true, true, 19, 5120, 48, kTooFew, {19, 40, 1}},  // gb10's 48 SMs: 96 CTAs
    {true, true, true, 20, 5120, 48, kTwinRuns, {20, 5, 1}},
    {true, true, true, 1, 1152, 0, kTwinRuns, {1, 2, 1}},  // sm_count 0 counts as 1; 9 groups, a ragged CTA
    {true, true, true, 1, 128, 1, kTooFew, {1, 1, 1}},
};

}  // namespace

TEST_CASE("the FP8 guard and pick follow the seed's table of inputs and outcomes", "[ops][fp8]") {
  for (const Fp8GuardRow& row : kFp8GuardTable) {
    INFO("requested=" << row.requested << " twin=" << row.twin_present << " shared=" << row.shared_present
                      << " M=" << row.m << " K=" << row.k << " sms=" << row.sms);
    const Fp8QuantKernels kernels{row.shared_present ? kShared : KernelHandle{},
                                  row.twin_present ? kTwin : KernelHandle{}};
    const auto reject =
        fp8_act_quant_hopper_reject(row.requested, row.twin_present, row.shared_present, row.m, row.k, row.sms);
    const Fp8QuantPick pick = fp8_quant_pick(row.requested, kernels, row.m, row.k, row.sms);
    CHECK(pick.requested == row.requested);
    CHECK(pick.grid == row.grid);
    if (row.expected == kTwinRuns) {
      CHECK_FALSE(reject.has_value());
      CHECK(pick.twin);
      CHECK(pick.kernel == kTwin);
      CHECK(pick.block == Dim3{128, 1, 1});
      CHECK_FALSE(pick.reject.has_value());
    } else {
      CHECK(reject == row.expected);
      CHECK_FALSE(pick.twin);
      CHECK(pick.kernel == kernels.shared);
      CHECK(pick.block == Dim3{16, 1, 1});
      CHECK(pick.reject == row.expected);
    }
  }
}

TEST_CASE("the FP8 reasons are listed in the seed's order", "[ops][fp8]") {
  const std::vector<std::string_view> seed_order{kNotRequested, kAbsent, kTooFew};
  CHECK(std::vector<std::string_view>(kFp8QuantRejects.begin(), kFp8QuantRejects.end()) == seed_order);
}

TEST_CASE("every FP8 reason has its own log slot", "[ops][fp8]") {
  std::set<std::size_t> flags;
  for (std::size_t i = 0; i < kFp8QuantRejects.size(); ++i) {
    Fp8QuantPick pick;
    pick.reject = kFp8QuantRejects[i];
    pick.requested = true;
    const auto slot = fp8_quant_log_slot(pick);
    REQUIRE(slot.has_value());
    CHECK(slot->reject_index == i);
    flags.insert(slot->flag_index(kFp8QuantRejects.size()));
  }
  Fp8QuantPick twin_pick;
  twin_pick.twin = true;
  const auto twin_slot = fp8_quant_log_slot(twin_pick);
  REQUIRE(twin_slot.has_value());
  CHECK(twin_slot->twin);
  flags.insert(twin_slot->flag_index(kFp8QuantRejects.size()));
  CHECK(flags.size() == kFp8QuantLogSlots);
}

TEST_CASE("replayed FP8 call sequences log each outcome once", "[ops][fp8]") {
  const auto run = [](OnceSlots& said, bool requested, std::uint32_t m, std::uint32_t k) {
    const Fp8QuantPick pick = fp8_quant_pick(requested, both(), m, k, 132);
    return fp8_quant_log_line(pick, m, k, said);
  };
  SECTION("the lever off logs nothing") {
    OnceSlots said(kFp8QuantLogSlots);
    for (std::uint32_t m : {1u, 53u, 4096u}) {
      CHECK_FALSE(run(said, false, m, 5120).has_value());
    }
  }
  SECTION("small then large M logs both, naming M and K") {
    OnceSlots said(kFp8QuantLogSlots);
    const auto small = run(said, true, 52, 5120);
    REQUIRE(small.has_value());
    CHECK_THAT(*small, Catch::Contains("M=52 K=5120") && Catch::Contains(std::string(kFp8QuantTooFewCtas)));
    CHECK_FALSE(run(said, true, 1, 6144).has_value());
    const auto large = run(said, true, 53, 5120);
    REQUIRE(large.has_value());
    CHECK_THAT(*large, Catch::Contains("per_token_group_quant_fp8_hopper") && Catch::Contains("grid=(53,5,1)") &&
                           Catch::Contains("block=128"));
    CHECK_FALSE(run(said, true, 4096, 17408).has_value());
  }
}
