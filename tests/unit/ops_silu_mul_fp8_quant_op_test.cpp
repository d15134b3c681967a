// ops_silu_mul_fp8_quant_op_test.cpp: the SiLU-and-mul FP8 quant op without kernels: argument
// errors naming the argument and the rule, the parent's two launches and the twin's one (grids,
// blocks, arguments, scale strides, the scale kind), the guard's order and floor, its log slots,
// and no kernel to run.
#include <catch2/catch.hpp>
#include <functional>
#include <string>

#include "metrale/error.hpp"
#include "ops/silu_mul_fp8_quant/silu_mul_fp8_quant.hpp"
#include "support/ops_recording_gpu.hpp"

using namespace metrale;
using namespace metrale::ops;

namespace {

constexpr KernelHandle kSilu{41};
constexpr KernelHandle kQuant{42};
constexpr KernelHandle kFused{43};
constexpr DevicePtr kScratch{0x50000};

SiluMulFp8QuantKernels all_kernels() {
  SiluMulFp8QuantKernels k;
  k.silu_mul = kSilu;
  k.quant = kQuant;
  k.twin = kFused;
  return k;
}

// gate and up the two halves of one [M][2K] row.
SiluMulFp8QuantArgs args_for(std::uint32_t m, std::uint32_t k) {
  SiluMulFp8QuantArgs a;
  a.gate = DevicePtr{0x100000};
  a.up = DevicePtr{0x100000 + std::uint64_t{k} * 2};
  a.q = DevicePtr{0x20000};
  a.scales = DevicePtr{0x30000};
  a.m = m;
  a.k = k;
  a.gate_row_stride = 2 * k;
  a.up_row_stride = 2 * k;
  return a;
}

void require_argument_error(const std::function<void(SiluMulFp8QuantArgs&)>& mutate, const std::string& needle) {
  SiluMulFp8QuantArgs args = args_for(64, 5120);
  mutate(args);
  test::RecordingGpu gpu;
  INFO("expected an ArgumentError containing: " << needle);
  REQUIRE_THROWS_AS(silu_mul_fp8_quant(gpu, all_kernels(), true, args, kScratch), ArgumentError);
  REQUIRE_THROWS_WITH(silu_mul_fp8_quant(gpu, all_kernels(), true, args, kScratch), Catch::Contains(needle));
  CHECK(gpu.launches.empty());
}

}  // namespace

TEST_CASE("silu_mul_fp8_quant refuses shapes no kernel can take, naming the argument and the rule", "[ops][silu_mul]") {
  using A = SiluMulFp8QuantArgs;
  require_argument_error([](A& a) { a.gate = DevicePtr{}; }, "silu_mul_fp8_quant: gate is a null pointer");
  require_argument_error([](A& a) { a.up = DevicePtr{}; }, "up is a null pointer");
  require_argument_error([](A& a) { a.q = DevicePtr{}; }, "q is a null pointer");
  require_argument_error([](A& a) { a.scales = DevicePtr{}; }, "scales is a null pointer");
  require_argument_error([](A& a) { a.gate = DevicePtr{0x100008}; }, "gate (0x100008) is not 16-byte aligned");
  require_argument_error([](A& a) { a.up = DevicePtr{0x100008}; }, "up (0x100008) is not 16-byte aligned");
  require_argument_error([](A& a) { a.q = DevicePtr{0x20004}; }, "q (0x20004) is not 8-byte aligned");
  require_argument_error([](A& a) { a.scales = DevicePtr{0x30002}; }, "scales (0x30002) is not 4-byte");
  require_argument_error([](A& a) { a.m = 0; }, "empty shape M=0");
  require_argument_error([](A& a) { a.k = 0; }, "empty shape M=64 K=0");
  require_argument_error([](A& a) { a.k = 5000; }, "K=5000 is not a multiple of the group size 128");
  require_argument_error([](A& a) { a.gate_row_stride = 4096; }, "gate_row_stride=4096 < K=5120: the gate row");
  require_argument_error([](A& a) { a.up_row_stride = 4096; }, "up_row_stride=4096 < K=5120: the up row");
  require_argument_error([](A& a) { a.gate_row_stride = 5124; }, "gate_row_stride=5124 is not a multiple of 8");
  require_argument_error([](A& a) { a.up_row_stride = 10244; }, "up_row_stride=10244 is not a multiple of 8");
  require_argument_error(
      [](A& a) {
        a.scale_layout = Fp8ScaleLayout::kColumnMajor;
        a.m_aligned = 60;
      },
      "m_aligned >= M and a multiple of 4 (m_aligned=60, M=64)");
  require_argument_error(
      [](A& a) {
        a.scale_layout = Fp8ScaleLayout::kColumnMajor;
        a.m_aligned = 66;
      },
      "(m_aligned=66, M=64)");
  require_argument_error(
      [](A& a) {
        a.m = 0xffffffffu;
        a.k = 0xffffff80u;
        a.gate_row_stride = a.up_row_stride = 0xffffff80u;
      },
      "gate extent (M x gate_row_stride bf16)");
  require_argument_error([](A& a) { a.m = 0x80000000u; }, "exceeds the largest grid.x");
  require_argument_error(
      [](A& a) {
        a.k = 128u * 65536u;
        a.gate_row_stride = a.up_row_stride = a.k;
      },
      "more than grid.y allows");
}

TEST_CASE("the parent is two launches through a scratch, the twin one, with the FP8 op's scale strides",
          "[ops][silu_mul]") {
  test::RecordingGpu gpu;
  SiluMulFp8QuantArgs args = args_for(50, 17408);
  args.scale_layout = Fp8ScaleLayout::kColumnMajor;
  args.m_aligned = 52;
  args.scale_kind = Fp8ScaleKind::kPow2;
  launch_silu_mul_parent(gpu, all_kernels(), args, kScratch);
  launch_silu_mul_twin(gpu, kFused, all_kernels().twin_params, args);
  REQUIRE(gpu.launches.size() == 3);
  const auto& silu = gpu.launches[0];
  CHECK(silu.kernel == kSilu);
  CHECK(silu.config.grid == Dim3{50, 9, 1});  // 2176 vectors of 8 over 256 threads
  CHECK(silu.config.block == Dim3{256, 1, 1});
  REQUIRE(silu.args.size() == 7);
  CHECK(silu.arg<std::uint64_t>(0) == args.gate.address);
  CHECK(silu.arg<std::uint64_t>(1) == args.up.address);
  CHECK(silu.arg<std::uint64_t>(2) == kScratch.address);
  CHECK(silu.arg<std::uint32_t>(4) == 17408);
  CHECK(silu.arg<std::uint32_t>(5) == 2 * 17408);
  CHECK(silu.arg<std::uint32_t>(6) == 2 * 17408);
  const auto& quant = gpu.launches[1];
  CHECK(quant.kernel == kQuant);
  CHECK(quant.config.grid == Dim3{50, 136, 1});
  CHECK(quant.config.block == Dim3{16, 1, 1});
  REQUIRE(quant.args.size() == 9);
  CHECK(quant.arg<std::uint64_t>(0) == kScratch.address);
  CHECK(quant.arg<std::uint32_t>(5) == 17408);  // h's rows are K long
  const auto& fused = gpu.launches[2];
  CHECK(fused.kernel == kFused);
  CHECK(fused.config.grid == Dim3{50, 17, 1});
  CHECK(fused.config.block == Dim3{32, 1, 1});
  REQUIRE(fused.args.size() == 11);
  CHECK(fused.arg<std::uint64_t>(2) == 0x20000);
  CHECK(fused.arg<std::uint64_t>(3) == 0x30000);
  CHECK(fused.arg<std::uint32_t>(6) == 2 * 17408);
  CHECK(fused.arg<std::uint32_t>(7) == 2 * 17408);
  for (const auto* l : {&quant, &fused}) {
    const std::size_t strides = l == &quant ? 6 : 8;
    CHECK(l->arg<std::uint32_t>(strides) == 1);  // column-major: (1, m_aligned)
    CHECK(l->arg<std::uint32_t>(strides + 1) == 52);
    CHECK(l->arg<std::uint32_t>(strides + 2) == 1);  // UE8M0
  }
  REQUIRE_THROWS_WITH(launch_silu_mul_parent(gpu, all_kernels(), args, DevicePtr{}),
                      Catch::Contains("scratch is a null pointer"));
  REQUIRE_THROWS_WITH(launch_silu_mul_parent(gpu, all_kernels(), args, DevicePtr{0x50008}),
                      Catch::Contains("scratch (0x50008) is not 16-byte aligned"));
  REQUIRE_THROWS_WITH(launch_silu_mul_twin(gpu, kFused, KernelParams{0, 5, 8}, args),
                      Catch::Contains("lanes = 5: must be 16, 8 or 4"));
  CHECK(gpu.launches.size() == 3);
  CHECK(silu_mul_scratch_bytes(50, 17408) == 50ull * 17408 * 2);
  CHECK(silu_mul_fp8_quant_floor_bytes(8192, 17408) == 8192.0 * 17408 * 5 + 8192.0 * 136 * 4);
}

TEST_CASE("the fused twin's guard: its reasons in order, the FP8 twin's floor", "[ops][silu_mul]") {
  CHECK(silu_mul_fp8_quant_fused_reject(true, false, true, 8192, 17408, 132) == kSiluMulRejects[1]);
  CHECK(silu_mul_fp8_quant_fused_reject(false, false, true, 8192, 17408, 132) == kSiluMulRejects[1]);
  CHECK(silu_mul_fp8_quant_fused_reject(false, true, false, 1, 128, 132) == std::nullopt);  // no parent
  CHECK(silu_mul_fp8_quant_fused_reject(false, true, true, 8192, 17408, 132) == kSiluMulRejects[0]);
  CHECK(silu_mul_fp8_quant_fused_reject(true, true, true, 15, 17408, 132) == kSiluMulTooFewCtas);
  CHECK(silu_mul_fp8_quant_fused_reject(true, true, true, 16, 17408, 132) == std::nullopt);
  CHECK(silu_mul_fused_min_m(17408, 132) == 16);
  CHECK(silu_mul_fused_min_m(5120, 132) == 53);
  CHECK(silu_mul_fused_min_m(6144, 132) == 44);

  test::RecordingGpu gpu;
  CHECK(silu_mul_fp8_quant(gpu, all_kernels(), true, args_for(53, 5120), kScratch).twin);
  CHECK_FALSE(silu_mul_fp8_quant(gpu, all_kernels(), true, args_for(52, 5120), kScratch).twin);
  REQUIRE(gpu.launches.size() == 3);
  CHECK(gpu.launches[0].kernel == kFused);
  CHECK(gpu.launches[1].kernel == kSilu);
  CHECK(gpu.launches[2].kernel == kQuant);

  SiluMulFp8QuantKernels lone_twin;
  lone_twin.twin = kFused;
  CHECK(silu_mul_fp8_quant(gpu, lone_twin, false, args_for(1, 128), kScratch).twin);
  SiluMulFp8QuantKernels no_quant = all_kernels();
  no_quant.quant = KernelHandle{};
  no_quant.twin = KernelHandle{};
  REQUIRE_THROWS_AS(silu_mul_fp8_quant(gpu, no_quant, true, args_for(64, 5120), kScratch), BackendError);
  REQUIRE_THROWS_WITH(silu_mul_fp8_quant(gpu, no_quant, true, args_for(64, 5120), kScratch),
                      Catch::Contains("kernel absent"));
}

TEST_CASE("the fused twin's verdicts log once per slot, only when the lever asked", "[ops][silu_mul]") {
  OnceSlots said(kSiluMulLogSlots);
  const SiluMulFp8QuantKernels kernels = all_kernels();
  const auto below = silu_mul_fp8_quant_pick(true, kernels, 15, 17408, 132);
  const auto at = silu_mul_fp8_quant_pick(true, kernels, 16, 17408, 132);
  const auto off = silu_mul_fp8_quant_pick(false, kernels, 16, 17408, 132);
  CHECK(at.grid == Dim3{16, 17, 1});
  CHECK(at.block == Dim3{32, 1, 1});
  CHECK_FALSE(silu_mul_log_line(off, 16, 17408, said).has_value());
  const auto refused = silu_mul_log_line(below, 15, 17408, said);
  REQUIRE(refused.has_value());
  CHECK_THAT(*refused, Catch::Contains("NOT running at M=15 K=17408: too few CTAs"));
  CHECK_FALSE(silu_mul_log_line(below, 14, 17408, said).has_value());
  const auto runs = silu_mul_log_line(at, 16, 17408, said);
  REQUIRE(runs.has_value());
  CHECK_THAT(*runs, Catch::Contains("silu_mul_fp8_quant_fused (METRALE_SILU_MUL_FP8_QUANT_FUSED) M=16 K=17408 "
                                    "grid=(16,17,1) block=32"));
  CHECK_FALSE(silu_mul_log_line(at, 4096, 17408, said).has_value());
}
