// ops_fp8_act_quant_floor.cpp: the FP8 twin's CTA floor, grid function, guard, pick and log
// slots, pinned to the seed's table.
#include <catch2/catch.hpp>
#include <set>
#include <string>

#include "ops/fp8_act_quant_floor.hpp"

using namespace metrale;
using namespace metrale::ops;

namespace {

constexpr KernelHandle kShared{31};
constexpr KernelHandle kTwin{32};

Fp8QuantKernels both() { return Fp8QuantKernels{kShared, kTwin}; }

}  // namespace

TEST_CASE("FP8 constants follow the seed", "[ops][fp8]") {
  CHECK(kFp8QuantMinCtasPerSm == 2);
  CHECK(kFp8QuantGroups == 8);
  CHECK(kFp8QuantLanes * kFp8QuantGroups == 128);
  CHECK(fp8_quant_min_ctas(132) == 264);
  CHECK(fp8_quant_min_ctas(0) == 2);
  CHECK(kFp8QuantRejects[0] == "not requested");
  CHECK(kFp8QuantRejects[1] == "kernel absent from this image (kernels/hopper only)");
  CHECK(kFp8QuantRejects[2] == "too few CTAs to fill the device at 8 K-groups per CTA");
}

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

TEST_CASE("FP8 guard order: absent twin, then a lone twin runs, then the lever, then the floor", "[ops][fp8]") {
  CHECK(fp8_act_quant_hopper_reject(false, false, true, 1, 5120, 132) == kFp8QuantRejects[1]);
  CHECK(fp8_act_quant_hopper_reject(false, false, false, 4096, 5120, 132) == kFp8QuantRejects[1]);
  // Twin present, shared absent: the twin runs whatever the lever and the floor say.
  CHECK_FALSE(fp8_act_quant_hopper_reject(false, true, false, 1, 5120, 132).has_value());
  CHECK_FALSE(fp8_act_quant_hopper_reject(true, true, false, 1, 5120, 132).has_value());
  CHECK(fp8_act_quant_hopper_reject(false, true, true, 1, 5120, 132) == kFp8QuantRejects[0]);
  CHECK(fp8_act_quant_hopper_reject(false, true, true, 4096, 5120, 132) == kFp8QuantRejects[0]);
  CHECK(fp8_act_quant_hopper_reject(true, true, true, 1, 5120, 132) == kFp8QuantTooFewCtas);
  CHECK_FALSE(fp8_act_quant_hopper_reject(true, true, true, 4096, 5120, 132).has_value());
}

TEST_CASE("the FP8 pick sets kernel, grid and block from one decision", "[ops][fp8]") {
  for (bool requested : {false, true}) {
    for (KernelHandle shared : {KernelHandle{}, kShared}) {
      for (KernelHandle twin : {KernelHandle{}, kTwin}) {
        for (std::uint32_t m : {1u, 15u, 16u, 43u, 44u, 52u, 53u, 4096u}) {
          for (std::uint32_t k : {128u, 1152u, 5120u, 6144u, 17408u}) {
            for (std::uint32_t sms : {0u, 48u, 132u}) {
              const Fp8QuantKernels kernels{shared, twin};
              const Fp8QuantPick pick = fp8_quant_pick(requested, kernels, m, k, sms);
              const auto reject = fp8_act_quant_hopper_reject(requested, twin.present(), shared.present(), m, k, sms);
              REQUIRE(pick.reject == reject);
              REQUIRE(pick.twin == !reject.has_value());
              REQUIRE(pick.requested == requested);
              REQUIRE(pick.kernel == (pick.twin ? twin : shared));
              REQUIRE(pick.grid == fp8_quant_grid(pick.twin, m, k, pick.twin ? 8 : 1));
              REQUIRE(pick.block == Dim3{pick.twin ? 128u : 16u, 1, 1});
              if (pick.twin && shared.present()) {
                // The floor measured the grid this launch uses.
                REQUIRE(pick.grid.volume() >= fp8_quant_min_ctas(sms));
                REQUIRE(pick.grid.volume() == fp8_quant_hopper_ctas(m, k));
              }
            }
          }
        }
      }
    }
  }
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
