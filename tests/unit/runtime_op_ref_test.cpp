// runtime_op_ref_test.cpp: an op resolved once (Runtime::op, OpRef): its calls by named
// arguments and by values in declaration order run the guards' pick to the reference's bytes,
// and values it cannot take are refused by name before anything launches.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

#include "metrale/error.hpp"
#include "metrale/runtime.hpp"
#include "ops/ssm_ba_gates/ssm_ba_gates.hpp"
#include "ref/bf16.hpp"
#include "support/isolated_runtime.hpp"

using namespace metrale;
using metrale::test::upload;

TEST_CASE("OpRef: found once, run by names or by values, to the reference's bytes", "[runtime]") {
  auto runtime = Runtime::open(test::isolated_runtime_options(BackendChoice::kHost, 2));
  GpuBackend& gpu = *runtime->backend();
  const std::uint32_t m = 5, n = 96, k = 512, nv = 48, vpg = 3;
  const auto x = ref::random_bf16(std::size_t{m} * k, 61);
  const auto w = ref::random_bf16(std::size_t{n} * k, 62, 0.05f);
  const auto a_log = ref::random_floats(nv, 63, -1.0f, 1.0f);
  const auto dt_bias = ref::random_floats(nv, 64, -1.0f, 1.0f);
  std::vector<float> expected(std::size_t{m} * 2 * nv, 0.0f);
  ref::ssm_ba_gates_reference({x, w, a_log, dt_bias}, {m, n, k, k, 2 * nv, nv, vpg}, expected);
  const std::vector<float> poison(expected.size(), -12345.0f);
  const DevicePtr out = upload(gpu, poison);
  const std::vector<ops::NamedArg> args = {{"x", upload(gpu, x).address},
                                           {"weight", upload(gpu, w).address},
                                           {"a_log", upload(gpu, a_log).address},
                                           {"dt_bias", upload(gpu, dt_bias).address},
                                           {"gate_out", out.address},
                                           {"m", m},
                                           {"n", n},
                                           {"k", k},
                                           {"vheads_per_group", vpg}};
  const auto output = [&] {
    std::vector<float> got(expected.size());
    gpu.copy_to_host(got.data(), out, got.size() * sizeof(float));
    gpu.copy_to_device(out, poison.data(), poison.size() * sizeof(float));
    return got;
  };
  const OpRef op = runtime->op("ba-gates");  // an alias finds the op
  CHECK(op.declaration().name == "ssm_ba_gates");
  CHECK(op.run(args).role == "twin");  // M = 5 on 2 SMs: the twin
  CHECK(std::memcmp(output().data(), expected.data(), expected.size() * sizeof(float)) == 0);
  std::vector<std::uint64_t> values(op.declaration().args.size());
  ops::bind_args(op.declaration(), args, values);
  CHECK(op.run_values(values, 0, "parent").role == "parent");
  CHECK(std::memcmp(output().data(), expected.data(), expected.size() * sizeof(float)) == 0);

  std::vector<std::uint64_t> too_far = values;
  too_far[*op.declaration().arg_index("m")] = std::uint64_t{1} << 32;
  CHECK_THROWS_AS(op.run_values(too_far), ArgumentError);
  CHECK_THROWS_WITH(op.run_values(too_far), Catch::Contains("m=4294967296 is outside"));
  CHECK_THROWS_WITH(op.run_values(std::span(values).first(3)), Catch::Contains("3 argument values for 12"));
  const std::vector<float> untouched = output();
  CHECK(std::all_of(untouched.begin(), untouched.end(), [](float v) { return v == -12345.0f; }));
  CHECK_THROWS_AS(runtime->op("no_such_op"), KernelChoiceError);
}
