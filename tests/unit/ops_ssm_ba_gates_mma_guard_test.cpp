// ops_ssm_ba_gates_mma_guard_test.cpp: the tensor-core BA kernel's guard as a table (each reason at
// its boundary, in order when several apply), the combined pick (the kernel exactly when its
// guard says none, else the seeds' pick unchanged), and its log slots.
#include <catch2/catch.hpp>
#include <limits>
#include <set>

#include "ops/ssm_ba_gates/ssm_ba_gates.hpp"

using namespace metrale;
using namespace metrale::ops;

namespace {

constexpr KernelHandle kParent{11};
constexpr KernelHandle kTwin{22};
constexpr KernelHandle kMma{33};

// Everything fine at the Qwen3.5-27B prefill shape on an H200.
BaGatesMmaQuery good() {
  BaGatesMmaQuery q;
  q.requested = true;
  q.kernel_present = true;
  q.compute_capability = ComputeCapability{9, 0};
  q.m = 8192;
  q.n = 96;
  q.k = 5120;
  q.k_stride = 5120;
  q.aligned = true;
  q.sm_count = 132;
  q.tokens_per_block = 128;
  q.stages = 6;
  q.max_shared_bytes = 227 * 1024;
  return q;
}

// The ring of 6 stages at N = 96: 6 x (128 + 96) rows x 144 bytes.
constexpr std::uint64_t kRingAt96 = 6 * 224 * 144;

template <typename Edit>
std::optional<std::string_view> reject_with(Edit edit) {
  BaGatesMmaQuery q = good();
  edit(q);
  return ssm_ba_gates_mma_reject(q);
}

}  // namespace

TEST_CASE("the tensor-core guard: each reason at its boundary", "[ops][ba_gates_mma]") {
  struct Row {
    const char* what;
    std::optional<std::string_view> want;
    void (*edit)(BaGatesMmaQuery&);
  };
  const Row rows[] = {
      {"all good", std::nullopt, [](BaGatesMmaQuery&) {}},
      {"lever off", kBaGatesMmaRejects[0], [](BaGatesMmaQuery& q) { q.requested = false; }},
      {"kernel absent", kBaGatesMmaRejects[1], [](BaGatesMmaQuery& q) { q.kernel_present = false; }},
      {"sm_75", kBaGatesMmaRejects[2],
       [](BaGatesMmaQuery& q) {
         q.compute_capability = ComputeCapability{7, 5};
       }},
      {"sm_80", std::nullopt,
       [](BaGatesMmaQuery& q) {
         q.compute_capability = ComputeCapability{8, 0};
       }},
      {"sm_121", std::nullopt,
       [](BaGatesMmaQuery& q) {
         q.compute_capability = ComputeCapability{12, 1};
       }},
      {"unknown CC", kBaGatesMmaRejects[2], [](BaGatesMmaQuery& q) { q.compute_capability.reset(); }},
      {"N = 0", kBaGatesMmaRejects[3], [](BaGatesMmaQuery& q) { q.n = 0; }},
      {"K = 0", kBaGatesMmaRejects[3], [](BaGatesMmaQuery& q) { q.k = 0; }},
      {"N = 128", std::nullopt, [](BaGatesMmaQuery& q) { q.n = 128; }},
      {"N = 130", kBaGatesMmaRejects[4], [](BaGatesMmaQuery& q) { q.n = 130; }},
      {"K % 8", kBaGatesMmaRejects[5], [](BaGatesMmaQuery& q) { q.k = 5124, q.k_stride = 5128; }},
      {"K_stride % 8", kBaGatesMmaRejects[5], [](BaGatesMmaQuery& q) { q.k_stride = 5124; }},
      {"K = 8", std::nullopt, [](BaGatesMmaQuery& q) { q.k = 8, q.k_stride = 8; }},
      {"K_stride < K", kBaGatesMmaRejects[6], [](BaGatesMmaQuery& q) { q.k_stride = 5112; }},
      {"misaligned", kBaGatesMmaRejects[7], [](BaGatesMmaQuery& q) { q.aligned = false; }},
      {"shared memory: exactly the ring", std::nullopt, [](BaGatesMmaQuery& q) { q.max_shared_bytes = kRingAt96; }},
      {"shared memory: a byte short", kBaGatesMmaRejects[8],
       [](BaGatesMmaQuery& q) { q.max_shared_bytes = kRingAt96 - 1; }},
      {"99 KiB, 6 stages", kBaGatesMmaRejects[8], [](BaGatesMmaQuery& q) { q.max_shared_bytes = 99 * 1024; }},
      {"99 KiB, 64 tokens, 3 stages, N = 128", std::nullopt,
       [](BaGatesMmaQuery& q) { q.max_shared_bytes = 99 * 1024, q.tokens_per_block = 64, q.stages = 3, q.n = 128; }},
      {"48 KiB, 64 tokens, 3 stages", kBaGatesMmaRejects[8],
       [](BaGatesMmaQuery& q) { q.max_shared_bytes = 48 * 1024, q.tokens_per_block = 64, q.stages = 3; }},
      {"48 KiB, 64 tokens, 2 stages", std::nullopt,
       [](BaGatesMmaQuery& q) { q.max_shared_bytes = 48 * 1024, q.tokens_per_block = 64, q.stages = 2; }},
      // 11 blocks fill a twelfth of 132 SMs: 2 tiles of 128 split 8 ways along K.
      {"M = 255", kBaGatesMmaTooFewTokens, [](BaGatesMmaQuery& q) { q.m = 255; }},
      {"M = 256", std::nullopt, [](BaGatesMmaQuery& q) { q.m = 256; }},
      // No clusters below sm_90: 11 tiles.
      {"sm_80 M = 1407", kBaGatesMmaTooFewTokens,
       [](BaGatesMmaQuery& q) {
         q.m = 1407, q.compute_capability = ComputeCapability{8, 0};
       }},
      {"sm_80 M = 1408", std::nullopt,
       [](BaGatesMmaQuery& q) {
         q.m = 1408, q.compute_capability = ComputeCapability{8, 0};
       }},
      // K of 2 chunks splits at most 2 ways: 6 tiles.
      {"K = 128, M = 767", kBaGatesMmaTooFewTokens, [](BaGatesMmaQuery& q) { q.m = 767, q.k = 128, q.k_stride = 128; }},
      {"K = 128, M = 768", std::nullopt, [](BaGatesMmaQuery& q) { q.m = 768, q.k = 128, q.k_stride = 128; }},
      // gb10: 48 SMs want 4 blocks, one tile of 64 split 4 ways or more.
      {"gb10 M = 63", kBaGatesMmaTooFewTokens,
       [](BaGatesMmaQuery& q) { q.m = 63, q.sm_count = 48, q.tokens_per_block = 64, q.stages = 3; }},
      {"gb10 M = 64", std::nullopt,
       [](BaGatesMmaQuery& q) { q.m = 64, q.sm_count = 48, q.tokens_per_block = 64, q.stages = 3; }},
      {"sm_count 0", std::nullopt, [](BaGatesMmaQuery& q) { q.m = 128, q.sm_count = 0; }},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    CHECK(reject_with(row.edit) == row.want);
  }
  CHECK(ba_gates_mma_min_tokens(132, 64) == 704);      // 11 tiles of 64, no cluster
  CHECK(ba_gates_mma_min_tokens(148, 64) == 832);      // 13 tiles
  CHECK(ba_gates_mma_min_tokens(132, 128, 8) == 256);  // 11 blocks: 2 tiles x 8
  CHECK(ba_gates_mma_min_tokens(148, 128, 2) == 896);  // 13 blocks: 7 tiles x 2
  CHECK(ba_gates_mma_min_tokens(12, 64) == 64);
  CHECK(ba_gates_mma_min_tokens(13, 64) == 128);
  CHECK(ba_gates_mma_min_tokens(1, 64) == 64);
  CHECK(ba_gates_mma_min_tokens(2, 32) == 32);
  CHECK(ba_gates_mma_min_tokens(2, 32, 0) == 32);  // a split of 0 counts as 1
  CHECK(ba_gates_mma_min_tokens(std::numeric_limits<std::uint32_t>::max(), 64) ==
        std::numeric_limits<std::uint32_t>::max());
  CHECK(ba_gates_mma_max_cluster_blocks(5120, ComputeCapability{9, 0}) == 8);
  CHECK(ba_gates_mma_max_cluster_blocks(5120, ComputeCapability{12, 1}) == 8);
  CHECK(ba_gates_mma_max_cluster_blocks(192, ComputeCapability{9, 0}) == 2);  // 3 chunks: a power of two
  CHECK(ba_gates_mma_max_cluster_blocks(5120, ComputeCapability{8, 9}) == 1);
  CHECK(ba_gates_mma_max_cluster_blocks(5120, std::nullopt) == 1);
}

TEST_CASE("the tensor-core guard's reasons come in order when several apply", "[ops][ba_gates_mma]") {
  BaGatesMmaQuery q;  // everything wrong
  q.k = 4;
  q.k_stride = 0;
  q.n = 200;
  q.aligned = false;
  CHECK(ssm_ba_gates_mma_reject(q) == kBaGatesMmaRejects[0]);
  q.requested = true;
  CHECK(ssm_ba_gates_mma_reject(q) == kBaGatesMmaRejects[1]);
  q.kernel_present = true;
  CHECK(ssm_ba_gates_mma_reject(q) == kBaGatesMmaRejects[2]);
  q.compute_capability = ComputeCapability{9, 0};
  CHECK(ssm_ba_gates_mma_reject(q) == kBaGatesMmaRejects[4]);
  q.n = 96;
  CHECK(ssm_ba_gates_mma_reject(q) == kBaGatesMmaRejects[5]);
  q.k = 8;
  CHECK(ssm_ba_gates_mma_reject(q) == kBaGatesMmaRejects[6]);
  q.k_stride = 8;
  CHECK(ssm_ba_gates_mma_reject(q) == kBaGatesMmaRejects[7]);
  q.aligned = true;
  CHECK(ssm_ba_gates_mma_reject(q) == kBaGatesMmaRejects[8]);  // 6 stages past the 48 KiB default
  q.max_shared_bytes = 227 * 1024;
  CHECK(ssm_ba_gates_mma_reject(q) == kBaGatesMmaRejects[9]);
  q.m = 128;
  CHECK(ssm_ba_gates_mma_reject(q) == std::nullopt);
}

TEST_CASE("the combined pick: ssm_ba_gates_mma exactly when its guard says none, else the seeds' pick",
          "[ops][ba_gates_mma]") {
  int mmas = 0;
  int others = 0;
  for (const bool tensor_core : {false, true}) {
    for (const KernelHandle mma : {KernelHandle{}, kMma}) {
      for (const bool twin_requested : {false, true}) {
        for (const std::uint32_t m : {1u, 255u, 256u, 264u, 704u, 8192u}) {
          for (const std::uint32_t n : {0u, 96u, 130u}) {
            for (const std::uint32_t k_stride : {5112u, 5120u}) {
              BaGatesMmaQuery q = good();
              q.requested = tensor_core;
              q.kernel_present = !mma.present();  // the pick must take presence from the handle
              q.m = m;
              q.n = n;
              q.k_stride = k_stride;
              const BaGatesPick pick = ba_gates_pick_with_mma(q, mma, twin_requested, kParent, kTwin);
              q.kernel_present = mma.present();
              const auto reject = ssm_ba_gates_mma_reject(q);
              const BaGatesPick seeds = ba_gates_pick(twin_requested, kParent, kTwin, m, n, q.k, k_stride, 132);
              REQUIRE(pick.mma == !reject.has_value());
              if (pick.mma) {
                REQUIRE(pick.kernel == kMma);
                REQUIRE_FALSE(pick.twin);
                ++mmas;
              } else {
                REQUIRE(pick.mma_reject == reject);
                REQUIRE(pick.kernel == seeds.kernel);
                REQUIRE(pick.twin == seeds.twin);
                REQUIRE(pick.reject == seeds.reject);
                ++others;
              }
            }
          }
        }
      }
    }
  }
  CHECK(mmas > 0);
  CHECK(others > 0);
}

TEST_CASE("every tensor-core verdict has its own log slot, and the lever off logs nothing", "[ops][ba_gates_mma]") {
  std::set<std::size_t> flags;
  for (std::size_t i = 0; i < kBaGatesMmaRejects.size(); ++i) {
    BaGatesPick pick{kParent, false, std::nullopt};
    pick.mma_reject = kBaGatesMmaRejects[i];
    const auto slot = ba_gates_consulted_log_slot(kBaGatesMmaConsulted, pick, true);
    REQUIRE(slot.has_value());
    CHECK(slot->reject_index == i);
    flags.insert(slot->flag_index(kBaGatesMmaRejects.size()));
    CHECK_FALSE(ba_gates_consulted_log_slot(kBaGatesMmaConsulted, pick, false).has_value());
  }
  BaGatesPick ran{kMma, false, std::nullopt};
  ran.mma = true;
  flags.insert(ba_gates_consulted_log_slot(kBaGatesMmaConsulted, ran, true)->flag_index(kBaGatesMmaRejects.size()));
  CHECK(flags.size() == kBaGatesMmaLogSlots);

  OnceSlots said(kBaGatesMmaLogSlots);
  const KernelParams gb10{256, 64, 3};
  const auto first = ba_gates_consulted_log_line(kBaGatesMmaConsulted, ran, true, 8192, gb10, said);
  REQUIRE(first.has_value());
  CHECK_THAT(*first, Catch::Contains("ssm_ba_gates_mma") && Catch::Contains("M=8192") &&
                         Catch::Contains("block=256 tokens/tile=64 grid=(ceil(M/64)"));
  CHECK_FALSE(ba_gates_consulted_log_line(kBaGatesMmaConsulted, ran, true, 9000, gb10, said).has_value());
  BaGatesPick declined{kTwin, true, std::nullopt};
  declined.mma_reject = kBaGatesMmaTooFewTokens;
  const auto second = ba_gates_consulted_log_line(kBaGatesMmaConsulted, declined, true, 300, gb10, said);
  REQUIRE(second.has_value());
  CHECK_THAT(*second, Catch::Contains("NOT running at M=300") && Catch::Contains(std::string(kBaGatesMmaTooFewTokens)));
}

TEST_CASE("the tensor-core kernel's shared memory: the ring or the accumulator tile, and the device's limit",
          "[ops][ba_gates_mma]") {
  CHECK(ba_gates_mma_shared_bytes(128, 96, 6) == kRingAt96);
  CHECK(ba_gates_mma_shared_bytes(64, 96, 8) == 8 * 160 * 144);
  CHECK(ba_gates_mma_shared_bytes(64, 97, 8) == 8 * 176 * 144);  // N rounds up to whole tiles of 16
  CHECK(ba_gates_mma_shared_bytes(64, 128, 8) == 8 * 192 * 144);
  CHECK(ba_gates_mma_shared_bytes(64, 16, 2) == 64 * 132 * 4);  // the accumulator tile is larger
  CHECK(ba_gates_mma_shared_bytes(0xffffffffu, 0xffffffffu, 0xffffffffu) > 0xffffffffull);  // no wrap
  CHECK(ba_gates_mma_shared_limit(100000, ComputeCapability{9, 0}) == 100000);              // the device's answer first
  CHECK(ba_gates_mma_shared_limit(std::nullopt, ComputeCapability{9, 0}) == 227 * 1024);
  CHECK(ba_gates_mma_shared_limit(std::nullopt, ComputeCapability{12, 1}) == 99 * 1024);
  CHECK(ba_gates_mma_shared_limit(std::nullopt, ComputeCapability{8, 0}) == 163 * 1024);
  CHECK(ba_gates_mma_shared_limit(std::nullopt, ComputeCapability{8, 9}) == 99 * 1024);
  CHECK(ba_gates_mma_shared_limit(std::nullopt, ComputeCapability{10, 3}) == 227 * 1024);
  CHECK(ba_gates_mma_shared_limit(std::nullopt, ComputeCapability{7, 5}) == 48 * 1024);
  CHECK(ba_gates_mma_shared_limit(std::nullopt, std::nullopt) == 48 * 1024);
}
