// ops_ssm_ba_gates_decode_guard_test.cpp: the BA decode kernel's guard as a table (each reason at
// its boundary, in order when several apply), its K split, its place in the pick (after the
// tensor-core guard, the seeds' pick unchanged when it declines), its log slots and lines, and
// its launcher's refusals.
#include <catch2/catch.hpp>
#include <set>

#include "ops/ssm_ba_gates/ssm_ba_gates.hpp"
#include "support/kernels_support.hpp"

using namespace metrale;
using namespace metrale::ops;

namespace {

constexpr KernelHandle kParent{11};
constexpr KernelHandle kTwin{22};
constexpr KernelHandle kSplitK{44};

// Everything fine at the Qwen3.5-27B decode shape on an H200.
BaGatesDecodeQuery good() {
  BaGatesDecodeQuery q;
  q.requested = true;
  q.kernel_present = true;
  q.compute_capability = ComputeCapability{9, 0};
  q.m = 1;
  q.n = 96;
  q.k = 5120;
  q.k_stride = 5120;
  q.sm_count = 132;
  q.tokens_per_tile = 64;
  q.outs_per_block = 6;
  return q;
}

}  // namespace

TEST_CASE("the decode guard: each reason at its boundary", "[ops][ba_gates_decode]") {
  struct Row {
    const char* what;
    std::optional<std::string_view> want;
    void (*edit)(BaGatesDecodeQuery&);
  };
  const Row rows[] = {
      {"all good", std::nullopt, [](BaGatesDecodeQuery&) {}},
      {"lever off", kBaGatesDecodeRejects[0], [](BaGatesDecodeQuery& q) { q.requested = false; }},
      {"kernel absent", kBaGatesDecodeRejects[1], [](BaGatesDecodeQuery& q) { q.kernel_present = false; }},
      {"sm_89", kBaGatesDecodeRejects[2],
       [](BaGatesDecodeQuery& q) {
         q.compute_capability = ComputeCapability{8, 9};
       }},
      {"sm_100", std::nullopt,
       [](BaGatesDecodeQuery& q) {
         q.compute_capability = ComputeCapability{10, 0};
       }},
      {"unknown CC", kBaGatesDecodeRejects[2], [](BaGatesDecodeQuery& q) { q.compute_capability.reset(); }},
      {"N = 0", kBaGatesDecodeRejects[3], [](BaGatesDecodeQuery& q) { q.n = 0; }},
      {"K = 0", kBaGatesDecodeRejects[3], [](BaGatesDecodeQuery& q) { q.k = 0, q.k_stride = 0; }},
      {"K % 8", kBaGatesDecodeRejects[4], [](BaGatesDecodeQuery& q) { q.k = 5124, q.k_stride = 5128; }},
      {"K_stride % 8", kBaGatesDecodeRejects[4], [](BaGatesDecodeQuery& q) { q.k_stride = 5124; }},
      {"K_stride < K", kBaGatesDecodeRejects[5], [](BaGatesDecodeQuery& q) { q.k_stride = 5112; }},
      {"K = 512: a split of 2", std::nullopt, [](BaGatesDecodeQuery& q) { q.k = 512, q.k_stride = 512; }},
      {"K = 504: no split", kBaGatesDecodeNoSplit, [](BaGatesDecodeQuery& q) { q.k = 504, q.k_stride = 504; }},
      // 66 columns of 6 outputs x 2 > 132 SMs: the columns alone fill the device.
      {"N = 390", std::nullopt, [](BaGatesDecodeQuery& q) { q.n = 390; }},
      {"N = 402", kBaGatesDecodeNoSplit, [](BaGatesDecodeQuery& q) { q.n = 402; }},
      {"M = 64", std::nullopt, [](BaGatesDecodeQuery& q) { q.m = 64; }},
      {"M = 65", kBaGatesDecodeTooManyTokens, [](BaGatesDecodeQuery& q) { q.m = 65; }},
      {"M = 16 with a 16-token tile", std::nullopt, [](BaGatesDecodeQuery& q) { q.m = 16, q.tokens_per_tile = 16; }},
      {"M = 17 with a 16-token tile", kBaGatesDecodeTooManyTokens,
       [](BaGatesDecodeQuery& q) { q.m = 17, q.tokens_per_tile = 16; }},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    BaGatesDecodeQuery q = good();
    row.edit(q);
    CHECK(ssm_ba_gates_decode_reject(q) == row.want);
  }
}

TEST_CASE("the decode guard's reasons come in order when several apply", "[ops][ba_gates_decode]") {
  BaGatesDecodeQuery q = good();
  q.m = 1000;
  q.k = 256;
  q.k_stride = 256;
  CHECK(ssm_ba_gates_decode_reject(q) == kBaGatesDecodeNoSplit);
  q.k_stride = 248;
  CHECK(ssm_ba_gates_decode_reject(q) == kBaGatesDecodeRejects[5]);
  q.compute_capability = ComputeCapability{8, 0};
  CHECK(ssm_ba_gates_decode_reject(q) == kBaGatesDecodeRejects[2]);
  q.kernel_present = false;
  CHECK(ssm_ba_gates_decode_reject(q) == kBaGatesDecodeRejects[1]);
  q.requested = false;
  CHECK(ssm_ba_gates_decode_reject(q) == kBaGatesDecodeRejects[0]);
}

TEST_CASE("the decode kernel's K split: 8 at the decode shape, halved for short K, full SMs or old devices",
          "[ops][ba_gates_decode]") {
  const std::optional<ComputeCapability> h200 = ComputeCapability{9, 0};
  CHECK(ba_gates_splitk_cluster_blocks(1, 96, 5120, 64, 6, 132, h200) == 8);   // 16 columns x 8 = 128 CTAs
  CHECK(ba_gates_splitk_cluster_blocks(64, 96, 5120, 64, 6, 132, h200) == 8);  // one token tile
  CHECK(ba_gates_splitk_cluster_blocks(65, 96, 5120, 64, 6, 132, h200) == 4);  // two tiles: 32 x 4 = 128
  CHECK(ba_gates_splitk_cluster_blocks(1, 96, 5120, 64, 6, 100, h200) == 4);   // 16 x 8 > 100 SMs
  CHECK(ba_gates_splitk_cluster_blocks(1, 96, 2048, 64, 6, 132, h200) == 8);   // 256 vectors: 32 a rank
  CHECK(ba_gates_splitk_cluster_blocks(1, 96, 1024, 64, 6, 132, h200) == 4);
  CHECK(ba_gates_splitk_cluster_blocks(1, 96, 512, 64, 6, 132, h200) == 2);
  CHECK(ba_gates_splitk_cluster_blocks(1, 96, 504, 64, 6, 132, h200) == 1);
  CHECK(ba_gates_splitk_cluster_blocks(1, 96, 5120, 64, 6, 132, ComputeCapability{8, 9}) == 1);
  CHECK(ba_gates_splitk_cluster_blocks(1, 96, 5120, 64, 6, 132, std::nullopt) == 1);
  CHECK(ba_gates_splitk_cluster_blocks(1, 96, 5120, 0, 6, 132, h200) == 1);
  CHECK(ba_gates_splitk_cluster_blocks(1, 96, 5120, 64, 6, 0, h200) == 1);  // 0 SMs counts as 1
  // No product overflows: N and M at their largest.
  CHECK(ba_gates_splitk_cluster_blocks(UINT32_MAX, UINT32_MAX, UINT32_MAX, 1, 1, UINT32_MAX, h200) == 1);
  CHECK(ba_gates_splitk_shared_bytes(64, 6) == 64 * 6 * 4);
  const SplitKGrid grid = ba_gates_splitk_grid(70, 96, KernelParams{256, 64, 6}, 4);
  CHECK(grid.x == 64);
  CHECK(grid.y == 2);
}

TEST_CASE("the pick after the tensor-core guard: ssm_ba_gates_splitk exactly when its guard says none",
          "[ops][ba_gates_decode]") {
  int decodes = 0;
  int others = 0;
  for (const bool mma_ran : {false, true}) {
    for (const KernelHandle splitk : {KernelHandle{}, kSplitK}) {
      for (const bool requested : {false, true}) {
        for (const std::uint32_t m : {1U, 64U, 65U, 300U}) {
          for (const std::uint32_t k : {256U, 5120U}) {
            BaGatesPick after = ba_gates_pick(true, kParent, kTwin, m, 96, k, k, 132);
            after.mma = mma_ran;
            after.mma_reject = mma_ran ? std::nullopt : std::optional<std::string_view>(kBaGatesMmaTooFewTokens);
            BaGatesDecodeQuery q = good();
            q.requested = requested;
            q.kernel_present = !splitk.present();  // the pick must take presence from the handle
            q.m = m;
            q.k = k;
            q.k_stride = k;
            const BaGatesPick pick = ba_gates_pick_with_decode(after, q, splitk);
            q.kernel_present = splitk.present();
            const auto reject = ssm_ba_gates_decode_reject(q);
            if (mma_ran) {
              CHECK(pick.mma);
              CHECK_FALSE(pick.decode);
              CHECK_FALSE(pick.decode_reject.has_value());
              continue;
            }
            REQUIRE(pick.decode == !reject.has_value());
            CHECK(pick.mma_reject == after.mma_reject);
            if (pick.decode) {
              CHECK(pick.kernel == kSplitK);
              CHECK_FALSE(pick.twin);
              CHECK_FALSE(pick.reject.has_value());
              ++decodes;
            } else {
              CHECK(pick.decode_reject == reject);
              CHECK(pick.kernel == after.kernel);
              CHECK(pick.twin == after.twin);
              CHECK(pick.reject == after.reject);
              ++others;
            }
          }
        }
      }
    }
  }
  CHECK(decodes > 0);
  CHECK(others > 0);
}

TEST_CASE("every decode verdict has its own log slot, the lever off logs nothing", "[ops][ba_gates_decode]") {
  std::set<std::size_t> flags;
  for (std::size_t i = 0; i < kBaGatesDecodeRejects.size(); ++i) {
    BaGatesPick pick{kParent, false, std::nullopt};
    pick.decode_reject = kBaGatesDecodeRejects[i];
    const auto slot = ba_gates_consulted_log_slot(kBaGatesDecodeConsulted, pick, true);
    REQUIRE(slot.has_value());
    CHECK(slot->reject_index == i);
    flags.insert(slot->flag_index(kBaGatesDecodeRejects.size()));
    CHECK_FALSE(ba_gates_consulted_log_slot(kBaGatesDecodeConsulted, pick, false).has_value());
  }
  BaGatesPick ran{kSplitK, false, std::nullopt};
  ran.decode = true;
  flags.insert(
      ba_gates_consulted_log_slot(kBaGatesDecodeConsulted, ran, true)->flag_index(kBaGatesDecodeRejects.size()));
  CHECK(flags.size() == kBaGatesDecodeLogSlots);
  // Not consulted (the tensor-core kernel ran): no slot.
  BaGatesPick mma{KernelHandle{33}, false, std::nullopt};
  mma.mma = true;
  CHECK_FALSE(ba_gates_consulted_log_slot(kBaGatesDecodeConsulted, mma, true).has_value());

  OnceSlots said(kBaGatesDecodeLogSlots);
  const KernelParams shipped{256, 64, 6};
  const auto first = ba_gates_consulted_log_line(kBaGatesDecodeConsulted, ran, true, 1, shipped, said);
  REQUIRE(first.has_value());
  CHECK_THAT(*first, Catch::Contains("ssm_ba_gates_splitk") && Catch::Contains("M=1 ") &&
                         Catch::Contains("block=256 tokens/tile=64 outputs/CTA=6"));
  CHECK_FALSE(ba_gates_consulted_log_line(kBaGatesDecodeConsulted, ran, true, 2, shipped, said).has_value());
  BaGatesPick declined{kParent, false, kBaGatesTooFewTokens};
  declined.decode_reject = kBaGatesDecodeTooManyTokens;
  const auto second = ba_gates_consulted_log_line(kBaGatesDecodeConsulted, declined, true, 65, shipped, said);
  REQUIRE(second.has_value());
  CHECK_THAT(*second,
             Catch::Contains("NOT running at M=65") && Catch::Contains(std::string(kBaGatesDecodeTooManyTokens)));
  CHECK_FALSE(ba_gates_consulted_log_line(kBaGatesDecodeConsulted, declined, false, 65, shipped, said).has_value());
}

TEST_CASE("the decode launcher refuses variants past its rules and grids past CUDA's", "[ops][ba_gates_decode]") {
  auto runtime = Runtime::open(kernels_test::runtime_options(BackendChoice::kHost, 132));
  const BaGatesKernels kernels = ba_gates_kernels(*runtime);
  REQUIRE(kernels.splitk.present());
  GpuBackend& gpu = *runtime->backend();
  BaGatesArgs args{
      DevicePtr{4096}, DevicePtr{8192}, DevicePtr{64}, DevicePtr{128}, DevicePtr{256}, 1, 96, 5120, 5120, 96, 48, 3};
  struct Bad {
    KernelParams params;
    const char* names;
  };
  for (const Bad& bad :
       {Bad{{48, 64, 6}, "block = 48"}, Bad{{256, 0, 6}, "lanes = 0"}, Bad{{256, 129, 6}, "lanes = 129"},
        Bad{{256, 64, 0}, "groups = 0"}, Bad{{256, 64, 17}, "groups = 17"}}) {
    INFO(bad.names);
    CHECK_THROWS_WITH(launch_ba_gates_splitk(gpu, kernels.splitk, bad.params, args),
                      Catch::Contains("ssm_ba_gates_splitk") && Catch::Contains(bad.names));
  }
  // 65536 token tiles of one token: past grid.y.
  args.m = 65536;
  CHECK_THROWS_WITH(launch_ba_gates_splitk(gpu, kernels.splitk, KernelParams{256, 1, 6}, args),
                    Catch::Contains("past CUDA's") && Catch::Contains("M=65536"));
}
