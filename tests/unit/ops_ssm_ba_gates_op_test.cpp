// ops_ssm_ba_gates_op.cpp: the BA-gates op entry: argument errors, the launch it makes for each
// pick (grid, block, arguments in the kernels' order), and an absent kernel.
#include <catch2/catch.hpp>
#include <functional>
#include <string>
#include <tuple>

#include "metrale/error.hpp"
#include "metrale/ops/ssm_ba_gates.hpp"
#include "ops/ssm_ba_gates/ssm_ba_gates.hpp"
#include "support/ops_recording_gpu.hpp"

using namespace metrale;
using namespace metrale::ops;

namespace {

constexpr KernelHandle kParent{11};
constexpr KernelHandle kTwin{22};
constexpr KernelHandle kMma{33};

// Qwen3.5-27B's shape at M tokens, with distinct 16-byte aligned addresses.
BaGatesArgs qwen_args(std::uint32_t m) {
  BaGatesArgs a;
  a.x = DevicePtr{0x10000};
  a.weight = DevicePtr{0x20000};
  a.a_log = DevicePtr{0x30000};
  a.dt_bias = DevicePtr{0x40000};
  a.gate_out = DevicePtr{0x50000};
  a.m = m;
  a.n = 96;
  a.k = 5120;
  a.k_stride = 5120;
  a.gate_stride = 96;
  a.nv = 48;
  a.vheads_per_group = 3;
  return a;
}

void require_argument_error(const std::function<void(BaGatesArgs&)>& mutate, const std::string& needle) {
  BaGatesArgs args = qwen_args(300);
  mutate(args);
  test::RecordingGpu gpu;
  INFO("expected an ArgumentError containing: " << needle);
  REQUIRE_THROWS_AS(ssm_ba_gates(gpu, BaGatesKernels{kParent, kTwin}, true, args), ArgumentError);
  REQUIRE_THROWS_WITH(ssm_ba_gates(gpu, BaGatesKernels{kParent, kTwin}, true, args), Catch::Contains(needle));
  CHECK(gpu.launches.empty());
}

}  // namespace

TEST_CASE("ssm_ba_gates launches the twin on (M,1,1) at 264 tokens", "[ops][ba_gates]") {
  test::RecordingGpu gpu;
  const BaGatesArgs args = qwen_args(264);
  const BaGatesPick pick = ssm_ba_gates(gpu, BaGatesKernels{kParent, kTwin}, true, args, 7);
  CHECK(pick.twin);
  REQUIRE(gpu.launches.size() == 1);
  const test::RecordedLaunch& l = gpu.launches[0];
  CHECK(l.kernel == kTwin);
  CHECK(l.config.grid == Dim3{264, 1, 1});
  CHECK(l.config.block == Dim3{256, 1, 1});
  CHECK(l.config.stream == 7);
  REQUIRE(l.args.size() == 12);
  CHECK(l.arg<std::uint64_t>(0) == args.x.address);
  CHECK(l.arg<std::uint64_t>(1) == args.weight.address);
  CHECK(l.arg<std::uint64_t>(2) == args.a_log.address);
  CHECK(l.arg<std::uint64_t>(3) == args.dt_bias.address);
  CHECK(l.arg<std::uint64_t>(4) == args.gate_out.address);
  CHECK(l.arg<std::uint32_t>(5) == 264);
  CHECK(l.arg<std::uint32_t>(6) == 96);
  CHECK(l.arg<std::uint32_t>(7) == 5120);
  CHECK(l.arg<std::uint32_t>(8) == 5120);
  CHECK(l.arg<std::uint32_t>(9) == 96);
  CHECK(l.arg<std::uint32_t>(10) == 48);
  CHECK(l.arg<std::uint32_t>(11) == 3);
}

TEST_CASE("ssm_ba_gates keeps the parent below the floor, with the lever off, or without a twin", "[ops][ba_gates]") {
  test::RecordingGpu gpu;
  CHECK_FALSE(ssm_ba_gates(gpu, BaGatesKernels{kParent, kTwin}, true, qwen_args(263)).twin);
  CHECK_FALSE(ssm_ba_gates(gpu, BaGatesKernels{kParent, kTwin}, false, qwen_args(4096)).twin);
  CHECK_FALSE(ssm_ba_gates(gpu, BaGatesKernels{kParent, KernelHandle{}}, true, qwen_args(4096)).twin);
  REQUIRE(gpu.launches.size() == 3);
  for (const auto& l : gpu.launches) {
    CHECK(l.kernel == kParent);
    CHECK(l.config.grid.y == 24);  // ceil(96 / 4)
    CHECK(l.config.block == Dim3{256, 1, 1});
    CHECK(l.args.size() == 12);
  }
  CHECK(gpu.launches[0].config.grid.x == 263);
  CHECK(gpu.launches[1].config.grid.x == 4096);
}

TEST_CASE("ssm_ba_gates uses the fallback SM count when the device query fails", "[ops][ba_gates]") {
  test::RecordingGpu gpu(std::nullopt);
  CHECK(ssm_ba_gates(gpu, BaGatesKernels{kParent, kTwin}, true, qwen_args(264)).twin);
  CHECK_FALSE(ssm_ba_gates(gpu, BaGatesKernels{kParent, kTwin}, true, qwen_args(263)).twin);
  test::RecordingGpu gb10(48u);
  CHECK(ssm_ba_gates(gb10, BaGatesKernels{kParent, kTwin}, true, qwen_args(96)).twin);
}

TEST_CASE("ssm_ba_gates with no kernel to run is a BackendError", "[ops][ba_gates]") {
  test::RecordingGpu gpu;
  REQUIRE_THROWS_AS(ssm_ba_gates(gpu, BaGatesKernels{}, true, qwen_args(4096)), BackendError);
  REQUIRE_THROWS_WITH(ssm_ba_gates(gpu, BaGatesKernels{}, true, qwen_args(4096)), Catch::Contains("kernel absent"));
  REQUIRE_THROWS_AS(ssm_ba_gates(gpu, BaGatesKernels{KernelHandle{}, kTwin}, true, qwen_args(1)), BackendError);
  // The twin alone still runs when the guard takes it.
  CHECK(ssm_ba_gates(gpu, BaGatesKernels{KernelHandle{}, kTwin}, true, qwen_args(4096)).twin);
}

TEST_CASE("ssm_ba_gates refuses shapes no kernel can take, naming the constraint", "[ops][ba_gates]") {
  require_argument_error([](BaGatesArgs& a) { a.x = DevicePtr{}; }, "x is a null pointer");
  require_argument_error([](BaGatesArgs& a) { a.weight = DevicePtr{}; }, "weight is a null pointer");
  require_argument_error([](BaGatesArgs& a) { a.a_log = DevicePtr{}; }, "a_log is a null pointer");
  require_argument_error([](BaGatesArgs& a) { a.dt_bias = DevicePtr{}; }, "dt_bias is a null pointer");
  require_argument_error([](BaGatesArgs& a) { a.gate_out = DevicePtr{}; }, "gate_out is a null pointer");
  require_argument_error([](BaGatesArgs& a) { a.x = DevicePtr{0x10008}; }, "x (0x10008) is not 16-byte aligned");
  require_argument_error([](BaGatesArgs& a) { a.weight = DevicePtr{0x20004}; }, "weight (0x20004) is not 16-byte");
  require_argument_error([](BaGatesArgs& a) { a.gate_out = DevicePtr{0x50002}; }, "gate_out (0x50002) is not 4-byte");
  require_argument_error([](BaGatesArgs& a) { a.m = 0; }, "empty shape M=0");
  require_argument_error([](BaGatesArgs& a) { a.n = 0; }, "empty shape M=300 N=0");
  require_argument_error([](BaGatesArgs& a) { a.k = 0; }, "K=0");
  require_argument_error([](BaGatesArgs& a) { a.k = 5116; }, "K=5116 is not a multiple of 8");
  require_argument_error([](BaGatesArgs& a) { a.k_stride = 5112; }, "K_stride=5112 < K=5120");
  require_argument_error([](BaGatesArgs& a) { a.k_stride = 5124; }, "K_stride=5124 is not a multiple of 8");
  require_argument_error(
      [](BaGatesArgs& a) {
        a.n = 95;
        a.gate_stride = 96;
      },
      "N=95 and nv=48: N must be even with nv == N/2");
  require_argument_error([](BaGatesArgs& a) { a.nv = 47; }, "nv == N/2");
  require_argument_error([](BaGatesArgs& a) { a.gate_stride = 95; }, "gate_stride=95 < 2*nv=96");
  require_argument_error([](BaGatesArgs& a) { a.vheads_per_group = 0; }, "vheads_per_group=0 must be positive");
  require_argument_error([](BaGatesArgs& a) { a.vheads_per_group = 5; },
                         "vheads_per_group=5 must be positive and divide nv=48");
  require_argument_error(
      [](BaGatesArgs& a) {
        a.m = 0x7fffffffu;
        a.gate_stride = 0xfffffff0u;
      },
      "gate_out extent (M x gate_stride fp32)");
  require_argument_error([](BaGatesArgs& a) { a.m = 0x80000000u; }, "exceeds the largest grid.x");
}

TEST_CASE("BA launchers refuse variants whose template parameters break the kernels' constraints", "[ops][ba_gates]") {
  test::RecordingGpu gpu;
  CHECK_THROWS_AS(launch_ba_gates_parent(gpu, kParent, KernelParams{256, 32, 0}, qwen_args(1)), ArgumentError);
  CHECK_THROWS_AS(launch_ba_gates_parent(gpu, kParent, KernelParams{2048, 64, 0}, qwen_args(1)), ArgumentError);
  CHECK_THROWS_AS(launch_ba_gates_twin(gpu, kTwin, KernelParams{256, 64, 17}, qwen_args(1)), ArgumentError);
  CHECK_THROWS_AS(launch_ba_gates_twin(gpu, kTwin, KernelParams{256, 64, 0}, qwen_args(1)), ArgumentError);
  launch_ba_gates_parent(gpu, kParent, KernelParams{128, 64, 0}, qwen_args(5));
  REQUIRE(gpu.launches.size() == 1);
  CHECK(gpu.launches[0].config.grid == Dim3{5, 48, 1});  // two outputs per 128-thread block
  CHECK(ba_gates_parent_grid(7, 95, KernelParams{256, 64, 0}) == Dim3{7, 24, 1});
  CHECK(ba_gates_twin_grid(7) == Dim3{7, 1, 1});
}

namespace {

// N = 262152 needs ceil(N / 4) = 65538 parent blocks per token, past grid.y's 65535.
BaGatesArgs wide_n_args(std::uint32_t m) {
  BaGatesArgs a = qwen_args(m);
  a.n = 262152;
  a.nv = a.n / 2;
  a.gate_stride = a.n;
  a.vheads_per_group = 1;
  a.k = 8;
  a.k_stride = 8;
  return a;
}

}  // namespace

TEST_CASE("a shape the parent cannot launch goes to the twin, or is refused before anything runs", "[ops][ba_gates]") {
  for (const bool requested : {true, false}) {
    INFO("lever " << requested);
    test::RecordingGpu gpu;
    // One token at 132 SMs: the floor (and the lever, when off) would give it to the parent.
    const BaGatesPick pick = ssm_ba_gates(gpu, BaGatesKernels{kParent, kTwin}, requested, wide_n_args(1));
    CHECK(pick.twin);
    REQUIRE(gpu.launches.size() == 1);
    CHECK(gpu.launches[0].kernel == kTwin);
    CHECK(gpu.launches[0].config.grid == Dim3{1, 1, 1});
  }
  test::RecordingGpu gpu;
  CHECK_THROWS_WITH(ssm_ba_gates(gpu, BaGatesKernels{kParent, KernelHandle{}}, true, wide_n_args(1)),
                    Catch::Contains("65538 parent blocks per token") && Catch::Contains("grid.y"));
  CHECK(gpu.launches.empty());
  // A launchable N still follows the seed's guard: the parent at one token.
  const BaGatesPick small = ssm_ba_gates(gpu, BaGatesKernels{kParent, kTwin}, true, qwen_args(1));
  CHECK_FALSE(small.twin);
}

TEST_CASE("the guard sees the target's SM count when the device cannot say", "[ops][ba_gates][fp8]") {
  test::RecordingGpu unknown(std::nullopt);
  BaGatesKernels kernels{kParent, kTwin};
  // gb10's 48 SMs: the twin takes 96 tokens; the 132-SM default would refuse them.
  kernels.fallback_sm_count = 48;
  CHECK(ssm_ba_gates(unknown, kernels, true, qwen_args(96)).twin);
  kernels.fallback_sm_count = kFallbackSmCount;
  CHECK_FALSE(ssm_ba_gates(unknown, kernels, true, qwen_args(96)).twin);
  // A device that reports its count wins over the fallback.
  test::RecordingGpu known(48);
  CHECK(ssm_ba_gates(known, kernels, true, qwen_args(96)).twin);
}

TEST_CASE("the tensor-core launch asks for its stage ring's shared memory, and a smaller device gets the twin",
          "[ops][ba_gates][ba_gates_mma]") {
  BaGatesKernels kernels{kParent, kTwin};
  kernels.mma = kMma;
  const BaGatesLevers levers{true, true};
  for (const std::uint32_t n : {96u, 128u, 20u}) {
    INFO("N=" << n);
    test::RecordingGpu gpu;
    BaGatesArgs args = qwen_args(8192);
    args.n = n;
    args.gate_stride = n;
    args.nv = n / 2;
    args.vheads_per_group = n / 4;
    const BaGatesPick pick = ssm_ba_gates(gpu, kernels, levers, args);
    CHECK(pick.mma);
    REQUIRE(gpu.launches.size() == 1);
    CHECK(gpu.launches[0].kernel == kMma);
    // 64 tiles of 128 tokens, each split in two along K by a cluster of 2: 128 CTAs.
    CHECK(gpu.launches[0].config.grid == Dim3{128, 1, 1});
    CHECK(gpu.launches[0].config.cluster_blocks == 2);
    // 6 stages of (128 tokens + N in whole tiles of 16) rows of 144 bytes, or the fp32 tile.
    const std::uint32_t rows = 128 + (n + 15) / 16 * 16;
    CHECK(gpu.launches[0].config.dynamic_shared_bytes == std::max(6 * rows * 144, 128u * 132 * 4));
  }
  // Fewer tokens, more CTAs per tile: M 1024 is 8 tiles in clusters of 8; on 12 SMs, of 1.
  for (const auto& [sms, m, cluster] : {std::tuple{132u, 1024u, 8u}, std::tuple{132u, 256u, 8u},
                                        std::tuple{32u, 1024u, 4u}, std::tuple{12u, 1024u, 1u}}) {
    INFO("SMs " << sms << " M " << m);
    test::RecordingGpu gpu(sms);
    const BaGatesPick pick = ssm_ba_gates(gpu, kernels, levers, qwen_args(m));
    REQUIRE(pick.mma);
    REQUIRE(gpu.launches.size() == 1);
    CHECK(gpu.launches[0].config.cluster_blocks == cluster);
    CHECK(gpu.launches[0].config.grid == Dim3{(m + 127) / 128 * cluster, 1, 1});
  }
  // A device that cannot schedule clusters past 2 (cuOccupancyMaxActiveClusters says 0) gets the
  // split halved until one fits, not a failed launch; one that cannot say is taken at its word.
  for (const auto& [largest, cluster] : {std::pair{2u, 2u}, std::pair{5u, 4u}, std::pair{0u, 1u}}) {
    INFO("largest cluster " << largest);
    test::RecordingGpu gpu;
    gpu.largest_cluster = largest;
    REQUIRE(ssm_ba_gates(gpu, kernels, levers, qwen_args(1024)).mma);
    REQUIRE(gpu.launches.size() == 1);
    CHECK(gpu.launches[0].config.cluster_blocks == cluster);
    CHECK(gpu.launches[0].config.grid == Dim3{8 * cluster, 1, 1});
    CHECK(gpu.cluster_queries.front() == 8);
  }
  // A measurement's cap: at most 2, or 1 (and 0 counts as 1), without asking the device past it.
  for (const auto& [cap, cluster] : {std::pair{2u, 2u}, std::pair{3u, 2u}, std::pair{1u, 1u}, std::pair{0u, 1u}}) {
    INFO("cap " << cap);
    test::RecordingGpu gpu;
    launch_ba_gates_mma(gpu, kMma, kernels.mma_params, qwen_args(1024), 0, cap);
    REQUIRE(gpu.launches.size() == 1);
    CHECK(gpu.launches[0].config.cluster_blocks == cluster);
    CHECK(gpu.launches[0].config.grid == Dim3{8 * cluster, 1, 1});
    CHECK(gpu.cluster_queries == (cluster > 1 ? std::vector<std::uint32_t>{cluster} : std::vector<std::uint32_t>{}));
  }
  test::RecordingGpu unknown;
  REQUIRE(ssm_ba_gates(unknown, kernels, levers, qwen_args(1024)).mma);
  CHECK(unknown.launches.at(0).config.cluster_blocks == 8);
  CHECK(unknown.cluster_queries == std::vector<std::uint32_t>{8});
  test::RecordingGpu small;
  small.max_shared = 99 * 1024;  // an sm_89 or sm_12x device: 6 stages do not fit, so the twin runs
  const BaGatesPick pick = ssm_ba_gates(small, kernels, levers, qwen_args(8192));
  CHECK_FALSE(pick.mma);
  CHECK(pick.twin);
  CHECK(pick.mma_reject == std::optional(kBaGatesMmaRejects[8]));
  REQUIRE(small.launches.size() == 1);
  CHECK(small.launches[0].kernel == kTwin);
  // Launched past the guard (a forced variant), the launcher refuses instead of overrunning.
  CHECK_THROWS_WITH(launch_ba_gates_mma(small, kMma, kernels.mma_params, qwen_args(8192)),
                    Catch::Contains("needs 193536 bytes of shared memory; the device grants a block 101376"));
  CHECK(small.launches.size() == 1);
}
