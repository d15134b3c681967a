// ops_spec_fp8_test.cpp: fp8_act_quant re-declared as data (tests/support/fp8_as_data.hpp, built by
// ops::build_op) against the library's own declaration: over a table of shapes (zero, unaligned,
// overflowing, each rule's edge, both scale layouts), every combination of kernels present, the
// lever on and off, forced roles and three SM counts, both refuse the same calls with the same
// error type, or pick the same role and kernel with the same verdict reasons and launch the same
// grid, block and argument bytes; and explain agrees with run for both (the same role, the same
// reason, the same smallest M).
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "metrale/error.hpp"
#include "metrale/ops/op_declaration.hpp"
#include "ops/op_spec.hpp"
#include "support/fp8_as_data.hpp"
#include "support/fp8_spec_compare.hpp"
#include "support/ops_recording_gpu.hpp"

using namespace metrale;
using namespace metrale::ops;

using namespace metrale::test::fp8_compare;

TEST_CASE("fp8_act_quant declared as data picks, refuses and launches as the library's declaration",
          "[ops][spec][fp8]") {
  check_runs_as_library(build_op(test::fp8_as_data_spec()).op);
}

TEST_CASE("fp8_act_quant declared as data explains as the library does, and as its run picks", "[ops][spec][fp8]") {
  check_explains_as_library(build_op(test::fp8_as_data_spec()).op);
}

TEST_CASE("an op spec names what it cannot build", "[ops][spec]") {
  const auto refused = [](const std::function<void(OpSpec&)>& mutate, const std::string& needle) {
    OpSpec spec = test::fp8_as_data_spec();
    mutate(spec);
    INFO(needle);
    REQUIRE_THROWS_AS(build_op(spec), ArgumentError);
    REQUIRE_THROWS_WITH(build_op(spec), Catch::Contains(needle));
  };
  refused([](OpSpec& s) { s.roles[1].guard[2].holds = "m * ctas >= 2 * sm_count"; },
          "unknown name 'ctas' (known: x, q, scales, m, k");
  refused([](OpSpec& s) { s.roles[1].guard[2].holds = "m * ctas >= 2 * sm_count"; },
          "role 'twin': guard rule 3 ('too few CTAs");
  refused([](OpSpec& s) { s.roles[1].grid[1] = "ceil_div(k / 128, twin.groups"; }, "grid.y: expression");
  refused([](OpSpec& s) { s.roles[1].grid[1] = "ceil_div(k / 128, twin.groups"; }, "expected ')' at the end");
  refused([](OpSpec& s) { s.roles[0].kernel_args[3] = "tokens"; }, "kernel argument 4: expression 'tokens'");
  refused([](OpSpec& s) { s.roles[0].guard = {{"never", "0"}}; }, "the parent 'parent' has a guard or a lever");
  refused([](OpSpec& s) { s.shape_rules[0].holds = "m > 0 && sm_count > 0"; }, "unknown name 'sm_count'");
  refused([](OpSpec& s) { s.shape_rules[0].reason.clear(); }, "a rule needs a reason");
  refused([](OpSpec& s) { s.roles.clear(); }, "at least its parent role");
  refused([](OpSpec& s) { s.roles[1].lever = "m"; }, "the name 'm' is declared twice");
  refused([](OpSpec& s) { s.args[2].dims = {"m", "k/"}; }, "argument 'scales': dim");
}

TEST_CASE("an op spec's run names a rule that faults and a launch value out of range", "[ops][spec]") {
  OpSpec spec = test::fp8_as_data_spec();
  spec.roles[0].grid[1] = "k / 128 / parent.groups";  // 0 groups: division by zero
  const BuiltOp data = build_op(spec);
  Setup setup;
  test::RecordingGpu gpu(132);
  const LeverValue lever{false, Provenance::kBuiltIn, "test"};
  OpContext context = context_for(data.op, &gpu, setup, lever);
  context.kernels[0].params.groups = 0;
  const std::vector<std::uint64_t> values = values_for(Shape{8, 5120});
  REQUIRE_THROWS_WITH(run_op(context, OpCall{values, 0, {}}),
                      Catch::Contains("grid.y 'k / 128 / parent.groups': division by zero at m=8 k=5120"));
  context.kernels[0].params.groups = 100;  // 40 / 100 = 0 blocks
  REQUIRE_THROWS_WITH(run_op(context, OpCall{values, 0, {}}), Catch::Contains("= 0 is outside [1, 2^32)"));
  CHECK(gpu.launches.empty());
}
