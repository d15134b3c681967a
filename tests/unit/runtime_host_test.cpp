// The runtime end to end on the host backend: open (target, levers, registry, builtin host
// kernels), then both ops through guard, pick and launch, checked against the references.
#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

#include "metrale/error.hpp"
#include "metrale/ops/fp8_act_quant.hpp"
#include "metrale/ops/ssm_ba_gates.hpp"
#include "metrale/runtime.hpp"
#include "ops/fp8_act_quant/fp8_act_quant.hpp"
#include "ops/ssm_ba_gates/ssm_ba_gates.hpp"
#include "ref/bf16.hpp"
#include "support/build_gate.hpp"
#include "support/isolated_runtime.hpp"

using namespace metrale;
using metrale::test::upload;

namespace {

RuntimeOptions host_options(std::uint32_t sm_count) {
  return test::isolated_runtime_options(BackendChoice::kHost, sm_count);
}

}  // namespace

TEST_CASE("runtime on the host backend runs the BA-gates twin and parent to the reference's bytes", "[runtime]") {
  // sm_count 2: the twin takes M >= 4, so M = 3 runs the parent and M = 5 the twin.
  auto runtime = Runtime::open(host_options(2));
  REQUIRE(runtime->has_device());
  CHECK(runtime->target().name == "hopper");
  GpuBackend& gpu = *runtime->backend();
  const std::uint32_t n = 96, k = 512, nv = 48, vpg = 3;
  for (const std::uint32_t m : {3u, 5u}) {
    const auto x = ref::random_bf16(static_cast<std::size_t>(m) * k, 11 + m);
    const auto w = ref::random_bf16(static_cast<std::size_t>(n) * k, 23 + m, 0.05f);
    const auto a_log = ref::random_floats(nv, 5, -1.0f, 1.0f);
    const auto dt_bias = ref::random_floats(nv, 6, -1.0f, 1.0f);
    std::vector<float> out(static_cast<std::size_t>(m) * 2 * nv, -12345.0f);  // poison
    ops::BaGatesArgs args{upload(gpu, x),
                          upload(gpu, w),
                          upload(gpu, a_log),
                          upload(gpu, dt_bias),
                          upload(gpu, out),
                          m,
                          n,
                          k,
                          k,
                          2 * nv,
                          nv,
                          vpg};
    const ops::BaGatesPick pick = ops::ssm_ba_gates(*runtime, args);
    CHECK(pick.twin == (m == 5u));
    gpu.copy_to_host(out.data(), args.gate_out, out.size() * sizeof(float));
    std::vector<float> expected(out.size(), 0.0f);
    ref::ssm_ba_gates_reference({x, w, a_log, dt_bias}, {m, n, k, k, 2 * nv, nv, vpg}, expected);
    CHECK(std::memcmp(out.data(), expected.data(), out.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("runtime on the host backend quantises to the reference's bytes", "[runtime]") {
  auto runtime = Runtime::open(host_options(2));
  GpuBackend& gpu = *runtime->backend();
  const std::uint32_t m = 3, k = 1024;
  const auto x = ref::random_bf16(static_cast<std::size_t>(m) * k, 99, 4.0f);
  std::vector<std::uint8_t> q(static_cast<std::size_t>(m) * k, 0xAB);
  std::vector<float> scales(static_cast<std::size_t>(m) * (k / 128), -1.0f);
  ops::Fp8QuantArgs args{upload(gpu, x), upload(gpu, q), upload(gpu, scales), m, k, k};
  const ops::Fp8QuantPick pick = ops::fp8_act_quant(*runtime, args);
  CHECK_FALSE(pick.twin);  // the twin's grid is 3 x 1 CTAs, under the floor of 2 x 2 SMs
  CHECK(pick.reject == ops::kFp8QuantTooFewCtas);
  gpu.copy_to_host(q.data(), args.q, q.size());
  gpu.copy_to_host(scales.data(), args.scales, scales.size() * sizeof(float));
  const auto expected = ref::fp8_act_quant_reference(x, {m, k, k, false});
  CHECK(q == expected.q);
  CHECK(scales == expected.scales);
}

TEST_CASE("a runtime with no device says why, and its ops refuse", "[runtime]") {
  // Ordinal -1 names no device whether or not this machine has a GPU (no driver: the driver's
  // reason; a driver: "CUDA device -1 does not exist"), so the test holds both with and without one.
  RuntimeOptions options = test::isolated_runtime_options(BackendChoice::kCuda);
  options.device_ordinal = -1;
  auto runtime = Runtime::open(std::move(options));
  REQUIRE_FALSE(runtime->has_device());
  CHECK_FALSE(runtime->no_device_reason().empty());
  CHECK(runtime->backend() == nullptr);
  CHECK(runtime->target().name == "hopper");
  CHECK_FALSE(ops::ba_gates_kernels(*runtime).parent.present());
  CHECK_THROWS_WITH(ops::fp8_act_quant(*runtime, ops::Fp8QuantArgs{}),
                    Catch::Matchers::Contains(runtime->no_device_reason()));
  CHECK_THROWS_AS(ops::ssm_ba_gates(*runtime, ops::BaGatesArgs{}), BackendError);
}

TEST_CASE("a runtime opened with background twins picks the parent until the twin arrives", "[runtime]") {
  test::BuildGate gate;
  RuntimeOptions options = host_options(2);
  options.load_mode = LoadMode::kBackgroundTwins;
  options.registry->background_gate = gate.hold();
  auto runtime = Runtime::open(std::move(options));
  // open() has returned with the gate shut: the parents are loaded, the twins are not.
  CHECK(ops::ba_gates_kernels(*runtime).parent.present());
  CHECK(ops::fp8_quant_kernels(*runtime).shared.present());
  CHECK_FALSE(ops::ba_gates_kernels(*runtime).twin.present());
  const ops::Fp8QuantKernels early = ops::fp8_quant_kernels(*runtime);
  REQUIRE_FALSE(early.twin.present());
  const ops::Fp8QuantPick early_pick = ops::fp8_quant_pick(true, early, 64, 1024, 2);
  CHECK_FALSE(early_pick.twin);
  CHECK(early_pick.reject == ops::kFp8QuantRejects[1]);  // kernel absent
  gate.open();
  runtime->registry().wait_background();
  CHECK(ops::ba_gates_kernels(*runtime).twin.present());
  CHECK(ops::fp8_quant_kernels(*runtime).twin.present());
  CHECK(ops::fp8_quant_pick(true, ops::fp8_quant_kernels(*runtime), 64, 1024, 2).twin);
}

TEST_CASE("a runtime whose background build failed closes without terminating", "[runtime]") {
  RuntimeOptions options = host_options(2);
  options.load_mode = LoadMode::kBackgroundTwins;
  options.registry->background_gate = [] { throw BackendError("injected background failure"); };
  auto runtime = Runtime::open(std::move(options));
  CHECK(ops::ba_gates_kernels(*runtime).parent.present());
  CHECK_FALSE(ops::ba_gates_kernels(*runtime).twin.present());
  // ~Runtime waits for the failed build; before the fix it rethrew from a destructor (terminate).
  runtime.reset();
  CHECK(runtime == nullptr);
}

TEST_CASE("wait_background reports a failed background build", "[runtime]") {
  RuntimeOptions options = host_options(2);
  options.load_mode = LoadMode::kBackgroundTwins;
  options.registry->background_gate = [] { throw BackendError("injected background failure"); };
  auto runtime = Runtime::open(std::move(options));
  CHECK_THROWS_WITH(runtime->registry().wait_background(), Catch::Matchers::Contains("injected background failure"));
  CHECK_FALSE(ops::fp8_quant_kernels(*runtime).twin.present());
}

TEST_CASE("the ops' SM fallback is the target's sm_count, not a constant", "[runtime]") {
  auto gb10 = Runtime::open(test::isolated_runtime_options(BackendChoice::kHost, 2, "gb10"));
  CHECK(ops::ba_gates_kernels(*gb10).fallback_sm_count == 48);
  CHECK(ops::fp8_quant_kernels(*gb10).fallback_sm_count == 48);
  auto b200 = Runtime::open(test::isolated_runtime_options(BackendChoice::kHost, 2, "b200"));
  CHECK(ops::ba_gates_kernels(*b200).fallback_sm_count == 148);
}
