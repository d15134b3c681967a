// ops_fp8_act_quant_op.cpp: the FP8 op entry: argument errors, the launch per pick (grid,
// block, arguments, scale strides for both layouts, the scale kind), and no kernel to run.
#include <catch2/catch.hpp>
#include <functional>
#include <string>

#include "metrale/error.hpp"
#include "metrale/ops/fp8_act_quant.hpp"
#include "support/ops_recording_gpu.hpp"

using namespace metrale;
using namespace metrale::ops;

namespace {

constexpr KernelHandle kShared{31};
constexpr KernelHandle kTwin{32};

Fp8QuantArgs args_for(std::uint32_t m, std::uint32_t k) {
  Fp8QuantArgs a;
  a.x = DevicePtr{0x10000};
  a.q = DevicePtr{0x20000};
  a.scales = DevicePtr{0x30000};
  a.m = m;
  a.k = k;
  a.x_row_stride = k;
  return a;
}

void require_argument_error(const std::function<void(Fp8QuantArgs&)>& mutate, const std::string& needle) {
  Fp8QuantArgs args = args_for(64, 5120);
  mutate(args);
  test::RecordingGpu gpu;
  INFO("expected an ArgumentError containing: " << needle);
  REQUIRE_THROWS_AS(fp8_act_quant(gpu, Fp8QuantKernels{kShared, kTwin}, true, args), ArgumentError);
  REQUIRE_THROWS_WITH(fp8_act_quant(gpu, Fp8QuantKernels{kShared, kTwin}, true, args), Catch::Contains(needle));
  CHECK(gpu.launches.empty());
}

}  // namespace

TEST_CASE("fp8_act_quant launches the twin at the floor and the shared kernel below it", "[ops][fp8]") {
  test::RecordingGpu gpu;
  const Fp8QuantPick twin = fp8_act_quant(gpu, Fp8QuantKernels{kShared, kTwin}, true, args_for(53, 5120));
  const Fp8QuantPick shared = fp8_act_quant(gpu, Fp8QuantKernels{kShared, kTwin}, true, args_for(52, 5120));
  CHECK(twin.twin);
  CHECK_FALSE(shared.twin);
  REQUIRE(gpu.launches.size() == 2);
  CHECK(gpu.launches[0].kernel == kTwin);
  CHECK(gpu.launches[0].config.grid == Dim3{53, 5, 1});
  CHECK(gpu.launches[0].config.block == Dim3{128, 1, 1});
  CHECK(gpu.launches[1].kernel == kShared);
  CHECK(gpu.launches[1].config.grid == Dim3{52, 40, 1});
  CHECK(gpu.launches[1].config.block == Dim3{16, 1, 1});
  for (const auto& l : gpu.launches) {
    REQUIRE(l.args.size() == 9);
    CHECK(l.arg<std::uint64_t>(0) == 0x10000);
    CHECK(l.arg<std::uint64_t>(1) == 0x20000);
    CHECK(l.arg<std::uint64_t>(2) == 0x30000);
    CHECK(l.arg<std::uint32_t>(4) == 5120);
    CHECK(l.arg<std::uint32_t>(5) == 5120);
    CHECK(l.arg<std::uint32_t>(6) == 40);  // row-major scales: (K/128, 1)
    CHECK(l.arg<std::uint32_t>(7) == 1);
    CHECK(l.arg<std::uint32_t>(8) == 0);
  }
}

TEST_CASE("fp8_act_quant passes column-major strides and the power-of-two flag", "[ops][fp8]") {
  test::RecordingGpu gpu;
  Fp8QuantArgs args = args_for(50, 6144);
  args.x_row_stride = 8192;
  args.scale_layout = Fp8ScaleLayout::kColumnMajor;
  args.m_aligned = 52;
  args.scale_kind = Fp8ScaleKind::kPow2;
  CHECK(fp8_scale_strides(args) == Fp8ScaleStrides{1, 52});
  fp8_act_quant(gpu, Fp8QuantKernels{kShared, kTwin}, true, args);
  REQUIRE(gpu.launches.size() == 1);
  const auto& l = gpu.launches[0];
  CHECK(l.kernel == kTwin);  // 50 x 6 = 300 CTAs
  CHECK(l.arg<std::uint32_t>(3) == 50);
  CHECK(l.arg<std::uint32_t>(5) == 8192);
  CHECK(l.arg<std::uint32_t>(6) == 1);
  CHECK(l.arg<std::uint32_t>(7) == 52);
  CHECK(l.arg<std::uint32_t>(8) == 1);
}

TEST_CASE("fp8_act_quant runs a lone twin at any M and refuses when nothing is built", "[ops][fp8]") {
  test::RecordingGpu gpu;
  CHECK(fp8_act_quant(gpu, Fp8QuantKernels{KernelHandle{}, kTwin}, false, args_for(1, 5120)).twin);
  REQUIRE(gpu.launches.size() == 1);
  CHECK(gpu.launches[0].config.grid == Dim3{1, 5, 1});
  REQUIRE_THROWS_AS(fp8_act_quant(gpu, Fp8QuantKernels{}, true, args_for(64, 5120)), BackendError);
  REQUIRE_THROWS_WITH(fp8_act_quant(gpu, Fp8QuantKernels{}, true, args_for(64, 5120)),
                      Catch::Contains("kernel absent"));
}

TEST_CASE("fp8_act_quant refuses shapes no kernel can take, naming the constraint", "[ops][fp8]") {
  require_argument_error([](Fp8QuantArgs& a) { a.x = DevicePtr{}; }, "x is a null pointer");
  require_argument_error([](Fp8QuantArgs& a) { a.q = DevicePtr{}; }, "q is a null pointer");
  require_argument_error([](Fp8QuantArgs& a) { a.scales = DevicePtr{}; }, "scales is a null pointer");
  require_argument_error([](Fp8QuantArgs& a) { a.x = DevicePtr{0x10008}; }, "x (0x10008) is not 16-byte aligned");
  require_argument_error([](Fp8QuantArgs& a) { a.q = DevicePtr{0x20004}; }, "q (0x20004) is not 8-byte aligned");
  require_argument_error([](Fp8QuantArgs& a) { a.scales = DevicePtr{0x30002}; }, "scales (0x30002) is not 4-byte");
  require_argument_error([](Fp8QuantArgs& a) { a.m = 0; }, "empty shape M=0");
  require_argument_error([](Fp8QuantArgs& a) { a.k = 0; }, "empty shape M=64 K=0");
  require_argument_error([](Fp8QuantArgs& a) { a.k = 5000; }, "K=5000 is not a multiple of the group size 128");
  require_argument_error([](Fp8QuantArgs& a) { a.x_row_stride = 4096; }, "x_row_stride=4096 < K=5120");
  require_argument_error([](Fp8QuantArgs& a) { a.x_row_stride = 5124; }, "x_row_stride=5124 is not a multiple of 8");
  require_argument_error(
      [](Fp8QuantArgs& a) {
        a.scale_layout = Fp8ScaleLayout::kColumnMajor;
        a.m_aligned = 60;
      },
      "m_aligned >= M and a multiple of 4 (m_aligned=60, M=64)");
  require_argument_error(
      [](Fp8QuantArgs& a) {
        a.scale_layout = Fp8ScaleLayout::kColumnMajor;
        a.m_aligned = 66;
      },
      "(m_aligned=66, M=64)");
  require_argument_error(
      [](Fp8QuantArgs& a) {
        a.m = 0xffffffffu;
        a.k = 0xffffff80u;
        a.x_row_stride = 0xffffff80u;
      },
      "x extent (M x x_row_stride bf16)");
  require_argument_error([](Fp8QuantArgs& a) { a.m = 0x80000000u; }, "exceeds the largest grid.x");
  require_argument_error(
      [](Fp8QuantArgs& a) {
        a.k = 128u * 65536u;
        a.x_row_stride = a.k;
      },
      "more than grid.y allows");
}

TEST_CASE("the FP8 guard sees the target's SM count when the device cannot say", "[ops][fp8]") {
  test::RecordingGpu unknown(std::nullopt);
  Fp8QuantKernels kernels{kShared, kTwin};
  // gb10's 48 SMs: 20 tokens at K = 5120 make 100 twin CTAs >= 96; at the 132-SM default, < 264.
  kernels.fallback_sm_count = 48;
  CHECK(fp8_act_quant(unknown, kernels, true, args_for(20, 5120)).twin);
  kernels.fallback_sm_count = kFallbackSmCount;
  CHECK_FALSE(fp8_act_quant(unknown, kernels, true, args_for(20, 5120)).twin);
  test::RecordingGpu known(48);
  CHECK(fp8_act_quant(known, kernels, true, args_for(20, 5120)).twin);
}
