// ops_fused_add_rmsnorm_op_test.cpp: the fused residual-add + RMSNorm op without kernels:
// argument errors naming the argument and the rule, the one launch (grid, block, the eps slot),
// the twin's guard at each rule's edge and in table order, no kernel to run, and through a host
// runtime: residual_out accepted in place of residual but refused overlapping x, and explain's
// verdict the call's own for each guard reason.
#include <catch2/catch.hpp>
#include <functional>
#include <string>

#include "metrale/error.hpp"
#include "metrale/runtime.hpp"
#include "ops/fused_add_rmsnorm/fused_add_rmsnorm.hpp"
#include "support/kernels_support.hpp"
#include "support/ops_recording_gpu.hpp"

using namespace metrale;
using namespace metrale::ops;

namespace {

constexpr KernelHandle kParentHandle{51};
constexpr KernelHandle kTwinHandle{52};

RmsnormKernels both() {
  RmsnormKernels k;
  k.parent = kParentHandle;
  k.twin = kTwinHandle;
  return k;
}

FusedAddRmsnormArgs args_for(std::uint32_t m, std::uint32_t hidden) {
  FusedAddRmsnormArgs a;
  a.x = DevicePtr{0x100000};
  a.residual = DevicePtr{0x200000};
  a.weight = DevicePtr{0x300000};
  a.y = DevicePtr{0x400000};
  a.residual_out = DevicePtr{0x200000};
  a.q = DevicePtr{0x500000};
  a.scales = DevicePtr{0x600000};
  a.m = m;
  a.hidden = hidden;
  a.x_row_stride = a.residual_row_stride = hidden;
  return a;
}

void require_argument_error(const std::function<void(FusedAddRmsnormArgs&)>& mutate, const std::string& needle) {
  FusedAddRmsnormArgs args = args_for(4, 5120);
  mutate(args);
  test::RecordingGpu gpu;
  INFO("expected an ArgumentError containing: " << needle);
  REQUIRE_THROWS_AS(fused_add_rmsnorm(gpu, both(), true, args), ArgumentError);
  REQUIRE_THROWS_WITH(fused_add_rmsnorm(gpu, both(), true, args), Catch::Contains(needle));
  CHECK(gpu.launches.empty());
}

}  // namespace

TEST_CASE("fused_add_rmsnorm refuses shapes no kernel can take, naming the argument and the rule", "[ops][rmsnorm]") {
  using A = FusedAddRmsnormArgs;
  require_argument_error([](A& a) { a.x = DevicePtr{}; }, "fused_add_rmsnorm: x is a null pointer");
  require_argument_error([](A& a) { a.residual_out = DevicePtr{}; }, "residual_out is a null pointer");
  require_argument_error([](A& a) { a.weight = DevicePtr{0x300001}; }, "weight");
  require_argument_error([](A& a) { a.scales = DevicePtr{}; }, "q and scales: give both");
  require_argument_error([](A& a) { a.q = DevicePtr{0x500004}; }, "q");
  require_argument_error([](A& a) { a.m = 0; }, "empty shape M=0");
  require_argument_error([](A& a) { a.hidden = 0; }, "empty shape");
  require_argument_error([](A& a) { a.x_row_stride = 5119; }, "x_row_stride=5119 < hidden=5120");
  require_argument_error([](A& a) { a.residual_row_stride = 100; }, "residual_row_stride=100 < hidden=5120");
  require_argument_error([](A& a) { a.hidden = a.x_row_stride = a.residual_row_stride = 5000; },
                         "hidden=5000 is not a multiple of the FP8 group size 128");
  require_argument_error([](A& a) { a.eps = -1.0F; }, "eps=-1 must be finite and >= 0");
  require_argument_error([](A& a) { a.m = 0x80000000u; }, "exceeds the grid's x limit");
  // hidden 5004 (not a multiple of 8) without the FP8 output is the parent's to run.
  test::RecordingGpu gpu;
  FusedAddRmsnormArgs plain = args_for(4, 5004);
  plain.q = plain.scales = DevicePtr{};
  const RmsnormPick pick = fused_add_rmsnorm(gpu, both(), true, plain);
  CHECK_FALSE(pick.twin);
  REQUIRE(gpu.launches.size() == 1);
  CHECK(gpu.launches[0].kernel == kParentHandle);
}

TEST_CASE("fused_add_rmsnorm launches one CTA per row with the shipped block and eps as a float", "[ops][rmsnorm]") {
  test::RecordingGpu gpu;
  FusedAddRmsnormArgs args = args_for(9, 5120);
  args.eps = 1e-5F;
  RmsnormKernels kernels = both();
  kernels.twin_params.block = kernels.parent_params.block = 256;
  const RmsnormPick pick = fused_add_rmsnorm(gpu, kernels, true, args);
  CHECK(pick.twin);
  REQUIRE(gpu.launches.size() == 1);
  const test::RecordedLaunch& launch = gpu.launches[0];
  CHECK(launch.kernel == kTwinHandle);
  CHECK(launch.config.grid.x == 9);
  CHECK(launch.config.block.x == 256);
  REQUIRE(launch.args.size() == 13);
  CHECK(launch.arg<std::uint64_t>(5) == 0x500000);  // q
  CHECK(launch.arg<std::uint32_t>(8) == 5120);      // hidden
  CHECK(launch.arg<float>(11) == 1e-5F);
}

TEST_CASE("the vectorised twin's guard: each rule at its edge, in table order", "[ops][rmsnorm]") {
  const auto reject = [](bool requested, bool twin, bool parent, const FusedAddRmsnormArgs& a) {
    return fused_add_rmsnorm_vec_reject(requested, twin, parent, a);
  };
  const FusedAddRmsnormArgs good = args_for(1, 5120);
  CHECK_FALSE(reject(true, true, true, good).has_value());
  CHECK(reject(true, false, true, good) == std::optional(kRmsnormRejects[1]));
  CHECK(reject(false, true, true, good) == std::optional(kRmsnormRejects[0]));
  CHECK_FALSE(reject(false, true, false, good).has_value());  // no parent: the lever cannot refuse
  FusedAddRmsnormArgs a = args_for(1, 5128);                  // 8 | 5128: taken
  CHECK_FALSE(reject(true, true, true, a).has_value());
  a.hidden = a.x_row_stride = a.residual_row_stride = 5124;  // one element past: refused
  CHECK(reject(true, true, true, a) == std::optional(kRmsnormRejects[2]));
  CHECK(reject(true, true, false, a) == std::optional(kRmsnormRejects[2]));  // even with no parent
  a = good;
  a.x_row_stride = 5128;
  CHECK_FALSE(reject(true, true, true, a).has_value());
  a.x_row_stride = 5124;
  CHECK(reject(true, true, true, a) == std::optional(kRmsnormRejects[3]));
  a = good;
  a.residual_row_stride = 5121;
  CHECK(reject(true, true, true, a) == std::optional(kRmsnormRejects[3]));
  for (DevicePtr FusedAddRmsnormArgs::*ptr :
       {&FusedAddRmsnormArgs::x, &FusedAddRmsnormArgs::residual, &FusedAddRmsnormArgs::weight, &FusedAddRmsnormArgs::y,
        &FusedAddRmsnormArgs::residual_out}) {
    a = good;
    (a.*ptr).address += 8;  // 8-byte aligned, not 16
    CHECK(reject(true, true, true, a) == std::optional(kRmsnormRejects[4]));
    (a.*ptr).address += 8;
    CHECK_FALSE(reject(true, true, true, a).has_value());
  }
  a = args_for(1, 5124);  // two rules fail: the first in the table is named
  a.x.address += 2;
  CHECK(reject(true, true, true, a) == std::optional(kRmsnormRejects[2]));
  // Every reason the guard returns is in the declared table, and the table is the declaration's.
  const OpDeclaration op = fused_add_rmsnorm_declaration();
  REQUIRE(op.guard("twin") != nullptr);
  CHECK(op.guard("twin")->reasons.size() == kRmsnormRejects.size());
}

TEST_CASE("fused_add_rmsnorm with no kernel that can run is a BackendError naming the guard", "[ops][rmsnorm]") {
  test::RecordingGpu gpu;
  RmsnormKernels only_twin;
  only_twin.twin = kTwinHandle;
  FusedAddRmsnormArgs args = args_for(2, 1024);
  args.x.address += 2;
  REQUIRE_THROWS_AS(fused_add_rmsnorm(gpu, only_twin, true, args), BackendError);
  REQUIRE_THROWS_WITH(fused_add_rmsnorm(gpu, only_twin, true, args), Catch::Contains(std::string(kRmsnormRejects[4])));
  CHECK(gpu.launches.empty());
}

TEST_CASE("fused_add_rmsnorm by name: residual_out in place of residual, not over x, explain agrees with run",
          "[ops][rmsnorm]") {
  auto runtime = Runtime::open(kernels_test::runtime_options(BackendChoice::kHost, 2));
  GpuBackend& gpu = *runtime->backend();
  const std::uint32_t m = 2;
  const std::uint32_t hidden = 256;
  kernels_test::DeviceBuffer x(gpu, ref::random_bf16(std::size_t{m} * hidden, 7, 1.0F));
  kernels_test::DeviceBuffer residual(gpu, ref::random_bf16(std::size_t{m} * hidden, 8, 1.0F));
  kernels_test::DeviceBuffer weight(gpu, ref::random_bf16(hidden, 9, 1.0F));
  kernels_test::DeviceBuffer y(gpu, std::size_t{m} * hidden * 2);
  const auto call = [&](std::uint64_t residual_out) {
    const NamedArg args[] = {
        {"x", x.ptr().address}, {"residual", residual.ptr().address}, {"weight", weight.ptr().address},
        {"y", y.ptr().address}, {"residual_out", residual_out},       {"m", m},
        {"hidden", hidden}};
    return runtime->run("fused_add_rmsnorm", args);
  };
  CHECK(call(residual.ptr().address).kernel == kRmsnormTwinKernel);
  REQUIRE_THROWS_AS(call(x.ptr().address), ArgumentError);
  REQUIRE_THROWS_WITH(call(x.ptr().address), Catch::Contains("residual_out") && Catch::Contains("x"));
  REQUIRE_THROWS_AS(call(residual.ptr().address + 2), ArgumentError);  // in place must start where residual does
  // explain at each guard reason a shape can produce says what run does.
  const NamedArg odd[] = {{"m", 3}, {"hidden", 204}};
  const Explanation refused = runtime->explain("fused_add_rmsnorm", odd);
  CHECK(refused.role == "parent");
  REQUIRE(refused.roles.size() == 1);
  CHECK(refused.roles[0].reject == std::optional<std::string>(kRmsnormRejects[2]));
  const NamedArg strided[] = {{"m", 3}, {"hidden", 256}, {"x_row_stride", 260}};
  CHECK(runtime->explain("fused_add_rmsnorm", strided).roles[0].reject ==
        std::optional<std::string>(kRmsnormRejects[3]));
  const NamedArg qwen[] = {{"m", 1}, {"hidden", 5120}};
  const Explanation taken = runtime->explain("fused_add_rmsnorm", qwen);
  CHECK(taken.role == "twin");
  CHECK(taken.roles[0].min_m == std::optional<std::uint32_t>(1));
  const NamedArg empty[] = {{"m", 0}, {"hidden", 5120}};
  REQUIRE_THROWS_AS(runtime->explain("fused_add_rmsnorm", empty), ArgumentError);
}
