// The ops' forced dispatch (ops::ssm_ba_gates / fp8_act_quant on a runtime with a role name) on
// the host backend: each forced kernel is the one that runs and computes the op's result (twin
// bytes == parent bytes == the reference's; the tensor-core kernel within the Frobenius bound of
// the float64 oracle); a kernel the target lacks, and "mma" for FP8, are KernelChoiceErrors naming
// what is missing, and the poisoned outputs stay untouched.
#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "metrale/error.hpp"
#include "metrale/ops/fp8_act_quant.hpp"
#include "metrale/ops/ssm_ba_gates.hpp"
#include "metrale/runtime.hpp"
#include "ops/fp8_act_quant/fp8_act_quant.hpp"
#include "ops/op_kernels.hpp"
#include "ops/ssm_ba_gates/ssm_ba_gates.hpp"
#include "ref/bf16.hpp"
#include "support/ba_gates_check.hpp"
#include "support/isolated_runtime.hpp"

using namespace metrale;
using metrale::test::upload;

namespace {

constexpr float kPoison = -12345.0f;
constexpr std::uint8_t kPoisonCode = 0xAB;

// A BA-gates problem on `gpu`, the output poisoned; poison() restores the poison between runs.
struct BaProblem {
  static constexpr std::uint32_t m = 5, n = 96, k = 512, nv = 48, vpg = 3;
  GpuBackend& gpu;
  std::vector<std::uint16_t> x = ref::random_bf16(std::size_t{m} * k, 41);
  std::vector<std::uint16_t> w = ref::random_bf16(std::size_t{n} * k, 43, 0.05f);
  std::vector<float> a_log = ref::random_floats(nv, 45, -1.0f, 1.0f);
  std::vector<float> dt_bias = ref::random_floats(nv, 47, -1.0f, 1.0f);
  std::vector<float> poisoned = std::vector<float>(std::size_t{m} * 2 * nv, kPoison);
  ops::BaGatesArgs args{upload(gpu, x),
                        upload(gpu, w),
                        upload(gpu, a_log),
                        upload(gpu, dt_bias),
                        upload(gpu, poisoned),
                        m,
                        n,
                        k,
                        k,
                        2 * nv,
                        nv,
                        vpg};

  [[nodiscard]] ref::BaGatesRefShape shape() const { return {m, n, k, k, 2 * nv, nv, vpg}; }
  void poison() { gpu.copy_to_device(args.gate_out, poisoned.data(), poisoned.size() * sizeof(float)); }
  [[nodiscard]] std::vector<float> out() const {
    std::vector<float> values(poisoned.size());
    gpu.copy_to_host(values.data(), args.gate_out, values.size() * sizeof(float));
    return values;
  }
};

// An FP8 problem on `gpu` (M = 3, K = 1024: the guard picks the shared kernel at 2 SMs).
struct Fp8Problem {
  static constexpr std::uint32_t m = 3, k = 1024;
  GpuBackend& gpu;
  std::vector<std::uint16_t> x = ref::random_bf16(std::size_t{m} * k, 53, 4.0f);
  std::vector<std::uint8_t> q_poison = std::vector<std::uint8_t>(std::size_t{m} * k, kPoisonCode);
  std::vector<float> scales_poison = std::vector<float>(std::size_t{m} * (k / 128), kPoison);
  ops::Fp8QuantArgs args{upload(gpu, x), upload(gpu, q_poison), upload(gpu, scales_poison), m, k, k};

  void poison() {
    gpu.copy_to_device(args.q, q_poison.data(), q_poison.size());
    gpu.copy_to_device(args.scales, scales_poison.data(), scales_poison.size() * sizeof(float));
  }
  [[nodiscard]] std::vector<std::uint8_t> q() const {
    std::vector<std::uint8_t> values(q_poison.size());
    gpu.copy_to_host(values.data(), args.q, values.size());
    return values;
  }
  [[nodiscard]] std::vector<float> scales() const {
    std::vector<float> values(scales_poison.size());
    gpu.copy_to_host(values.data(), args.scales, values.size() * sizeof(float));
    return values;
  }
};

// The message of the KernelChoiceError `call` throws; empty (and a failed check) when none.
template <typename Call>
std::string choice_error(Call&& call) {
  try {
    call();
  } catch (const KernelChoiceError& error) {
    return error.what();
  }
  FAIL_CHECK("no KernelChoiceError");
  return {};
}

}  // namespace

TEST_CASE("forced BA-gates kernels run that kernel: parent and twin to the reference's bytes, mma to the oracle",
          "[runtime][forced]") {
  auto runtime = Runtime::open(test::isolated_runtime_options(BackendChoice::kHost, 2));
  BaProblem p{*runtime->backend()};
  std::vector<float> expected(p.poisoned.size(), 0.0f);
  ref::ssm_ba_gates_reference({p.x, p.w, p.a_log, p.dt_bias}, p.shape(), expected);

  const ops::BaGatesPick parent = ops::ssm_ba_gates(*runtime, p.args, 0, "parent");
  CHECK_FALSE(parent.twin);
  CHECK_FALSE(parent.mma);
  CHECK(parent.reject == kForcedKernelReason);
  CHECK(parent.kernel == ops::ba_gates_kernels(*runtime).parent);
  const std::vector<float> parent_out = p.out();
  CHECK(std::memcmp(parent_out.data(), expected.data(), expected.size() * sizeof(float)) == 0);

  p.poison();
  const ops::BaGatesPick twin = ops::ssm_ba_gates(*runtime, p.args, 0, "twin");
  CHECK(twin.twin);
  CHECK_FALSE(twin.reject.has_value());
  CHECK(twin.kernel == ops::ba_gates_kernels(*runtime).twin);
  const std::vector<float> twin_out = p.out();
  CHECK(std::memcmp(twin_out.data(), parent_out.data(), parent_out.size() * sizeof(float)) == 0);

  p.poison();
  const ops::BaGatesPick mma = ops::ssm_ba_gates(*runtime, p.args, 0, "mma");
  CHECK(mma.mma);
  CHECK_FALSE(mma.twin);
  // N = 96 is pinned on hopper: the forced call runs its specialised variant, not the generic form,
  // as the runtime says a call at this shape takes.
  const std::vector<ops::NamedArg> shape{{"m", p.m}, {"n", p.n}, {"k", p.k}, {"vheads_per_group", p.vpg}};
  const std::vector<ShapeVariantState> states = runtime->shape_variants("ssm_ba_gates", shape);
  REQUIRE(states.size() == 1);
  CHECK(states[0].published);
  const std::optional<VariantId> taken = runtime->registry().find(states[0].kernel, states[0].params);
  REQUIRE(taken);
  CHECK(mma.kernel == runtime->registry().handle(*runtime->registry().device_index(*runtime->backend()), *taken));
  CHECK(mma.kernel != ops::ba_gates_kernels(*runtime).mma);
  const std::vector<double> oracle = ref::ssm_ba_gates_oracle({p.x, p.w, p.a_log, p.dt_bias}, p.shape());
  std::vector<std::uint32_t> rows(BaProblem::m);
  for (std::uint32_t t = 0; t < BaProblem::m; ++t) {
    rows[t] = t;
  }
  const std::vector<float> mma_out = p.out();
  const auto checked = check::check_ba_mma_run(mma_out, rows, oracle, 2 * BaProblem::nv, BaProblem::nv);
  INFO(checked.failure);
  CHECK(checked.failure.empty());
  // Its other summation order shows in the bytes: a parent launched in its place would not.
  CHECK(std::memcmp(mma_out.data(), parent_out.data(), parent_out.size() * sizeof(float)) != 0);

  // kGuard is the op's own pick (the tensor-core guard declines M = 5: too few tokens).
  p.poison();
  const ops::BaGatesPick guard = ops::ssm_ba_gates(*runtime, p.args, 0, "");
  CHECK_FALSE(guard.mma);
  CHECK(guard.reject != kForcedKernelReason);
  const std::vector<float> guard_out = p.out();
  CHECK(std::memcmp(guard_out.data(), expected.data(), expected.size() * sizeof(float)) == 0);
}

TEST_CASE("forced FP8 kernels run that kernel with the op's grid, to the reference's bytes", "[runtime][forced]") {
  auto runtime = Runtime::open(test::isolated_runtime_options(BackendChoice::kHost, 2));
  Fp8Problem p{*runtime->backend()};
  const auto expected = ref::fp8_act_quant_reference(p.x, {Fp8Problem::m, Fp8Problem::k, Fp8Problem::k, false});

  const ops::Fp8QuantPick guard = ops::fp8_act_quant(*runtime, p.args, 0, "");
  CHECK_FALSE(guard.twin);  // 3 x 1 twin CTAs are under the floor of 2 x 2 SMs

  p.poison();
  const ops::Fp8QuantPick twin = ops::fp8_act_quant(*runtime, p.args, 0, "twin");
  CHECK(twin.twin);
  CHECK_FALSE(twin.reject.has_value());
  CHECK(twin.kernel == ops::fp8_quant_kernels(*runtime).twin);
  const KernelEntry* twin_entry = runtime->target().find_kernel(kFp8ActQuantHopper);
  REQUIRE(twin_entry != nullptr);
  CHECK(twin.block.x == twin_entry->params.lanes * twin_entry->params.groups);
  CHECK(p.q() == expected.q);
  CHECK(p.scales() == expected.scales);

  p.poison();
  const ops::Fp8QuantPick shared = ops::fp8_act_quant(*runtime, p.args, 0, "parent");
  CHECK_FALSE(shared.twin);
  CHECK(shared.reject == kForcedKernelReason);
  CHECK(shared.kernel == ops::fp8_quant_kernels(*runtime).shared);
  CHECK(shared.grid.x == guard.grid.x);
  CHECK(p.q() == expected.q);
  CHECK(p.scales() == expected.scales);

  // FP8 has no tensor-core kernel: refused before anything runs.
  p.poison();
  const std::string message = choice_error([&] { ops::fp8_act_quant(*runtime, p.args, 0, "mma"); });
  CHECK(message.find("only the BA-gates op has a tensor-core kernel") != std::string::npos);
  CHECK(p.q() == p.q_poison);
  CHECK_THROWS_AS(ops::fp8_act_quant(*runtime, p.args, 0, "mma"), ArgumentError);
}

TEST_CASE("a forced kernel the target does not ship is an ArgumentError naming both, and writes nothing",
          "[runtime][forced]") {
  // generic ships only the portable parents: no twin, no tensor-core kernel.
  auto runtime = Runtime::open(test::isolated_runtime_options(BackendChoice::kHost, 2, "generic"));
  REQUIRE(runtime->has_device());
  REQUIRE_FALSE(ops::ba_gates_kernels(*runtime).twin.present());
  BaProblem ba{*runtime->backend()};
  for (const auto& [choice, kernel] :
       {std::pair{"twin", ops::kBaGatesTwinKernel}, std::pair{"mma", ops::kBaGatesMmaKernel}}) {
    const std::string message = choice_error([&] { ops::ssm_ba_gates(*runtime, ba.args, 0, choice); });
    INFO(message);
    CHECK(message.find("target generic") != std::string::npos);
    CHECK(message.find(std::string(kernel)) != std::string::npos);
    CHECK(ba.out() == ba.poisoned);
  }
  CHECK_THROWS_AS(ops::ssm_ba_gates(*runtime, ba.args, 0, "twin"), ArgumentError);

  Fp8Problem fp8{*runtime->backend()};
  const std::string message = choice_error([&] { ops::fp8_act_quant(*runtime, fp8.args, 0, "twin"); });
  CHECK(message.find("target generic") != std::string::npos);
  CHECK(message.find(std::string(ops::kFp8QuantTwinKernel)) != std::string::npos);
  CHECK(fp8.q() == fp8.q_poison);

  // The parents it does ship still run when forced.
  const ops::BaGatesPick parent = ops::ssm_ba_gates(*runtime, ba.args, 0, "parent");
  CHECK(parent.reject == kForcedKernelReason);
  std::vector<float> expected(ba.poisoned.size(), 0.0f);
  ref::ssm_ba_gates_reference({ba.x, ba.w, ba.a_log, ba.dt_bias}, ba.shape(), expected);
  const std::vector<float> out = ba.out();
  CHECK(std::memcmp(out.data(), expected.data(), expected.size() * sizeof(float)) == 0);
}
