// ops_spec_check_test.cpp: the check of an op declared as data (build_op's OpDeclaration::check),
// on the host backend, fp8_act_quant re-declared as data (support/fp8_as_data.hpp) served by a
// runtime beside the library's ops: its twin's bytes equal its parent's at the spec's check
// shapes, and each planted mistake fails the twin's rows, naming the output: a twin grid that drops
// the last partial CTA of a row (floor instead of ceil_div), a twin handed the wrong scale-kind
// flag, and a twin kernel with a planted mistake in its template (support/edited_templates.hpp,
// compiled by the host JIT). The same op's calls by name run through the runtime (Runtime::run).
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "metrale/runtime.hpp"
#include "ops/op_spec.hpp"
#include "support/edited_templates.hpp"
#include "support/fp8_as_data.hpp"
#include "support/isolated_runtime.hpp"
#include "support/temp_dir.hpp"

using namespace metrale;

namespace {

constexpr std::string_view kOp = "fp8_act_quant_data";

std::unique_ptr<Runtime> open_with(const ops::OpSpec& spec, const EnvLookup& env = test::no_environment,
                                   std::optional<std::string> cache_dir = std::nullopt) {
  RuntimeOptions options = test::isolated_runtime_options(BackendChoice::kHost, 2, "hopper");
  options.host_worker_threads = 2;
  options.env = env;
  if (cache_dir) {
    options.cache_dir = cache_dir;
  }
  ops::BuiltOp built = ops::build_op(spec);
  options.kernels = std::move(built.kernels);
  options.ops.push_back(std::move(built.op));
  return Runtime::open(std::move(options));
}

std::vector<ops::CheckResult> check_rows(const Runtime& runtime) {
  const ops::OpDeclaration& op = runtime.ops().get(kOp);
  REQUIRE(op.check);
  return op.check(runtime.op_context(kOp), ops::CheckOptions{});
}

std::string describe(const ops::CheckResult& r) {
  return fmt::format("{} {} {} [{}]: {} {}", r.role, r.kernel, r.shape, r.check, to_string(r.verdict), r.worst);
}

void expect_failed(const std::vector<ops::CheckResult>& rows, const std::vector<std::string>& needles) {
  REQUIRE(rows.size() == needles.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    INFO(describe(rows[i]));
    CHECK(rows[i].verdict == ops::CheckVerdict::kFailed);
    CHECK_THAT(rows[i].worst, Catch::Contains(needles[i]));
  }
}

}  // namespace

TEST_CASE("an op declared as data passes its check on the host: its twin's bytes are its parent's",
          "[ops][spec][host]") {
  const auto runtime = open_with(test::fp8_as_data_spec());
  const auto rows = check_rows(*runtime);
  REQUIRE(rows.size() == 2);
  for (const ops::CheckResult& row : rows) {
    INFO(describe(row));
    CHECK(row.role == "twin");
    CHECK(row.kernel == "fp8_act_quant_hopper");
    CHECK(row.check == "bytes == parent");
    CHECK(row.verdict == ops::CheckVerdict::kPassed);
    CHECK_THAT(row.worst, Catch::Contains("q elements equal the parent's bytes"));
    CHECK_THAT(row.worst, Catch::Contains("scales elements equal the parent's bytes"));
  }
  CHECK(rows[0].shape == "m=3 k=1152 x_row_stride=0 scale_layout=0 m_aligned=0 pow2_scales=0");
  // Served by name as the library's ops are, the guard's verdict named (2 host SMs: floor 4 CTAs).
  ops::CheckOptions only_parent;
  only_parent.role = "parent";
  CHECK(runtime->ops().get(kOp).check(runtime->op_context(kOp), only_parent).empty());  // the reference
}

TEST_CASE("a declared twin whose grid drops the last partial CTA fails its check, naming the element",
          "[ops][spec][host]") {
  ops::OpSpec spec = test::fp8_as_data_spec();
  spec.roles[1].grid[1] = "k / 128 / max(twin.groups, 1)";  // planted: floor, not ceil_div
  const auto runtime = open_with(spec);
  // K 1152: 9 groups, the 9th never written (the poison stays); K 256: 2 groups make grid.y 0.
  expect_failed(check_rows(*runtime), {"differ; first q[0][1024]", "grid.y 'k / 128 / max(twin.groups, 1)' = 0"});
}

TEST_CASE("a declared twin handed the wrong scale-kind flag fails its check", "[ops][spec][host]") {
  ops::OpSpec spec = test::fp8_as_data_spec();
  spec.roles[1].kernel_args[8] = "1 - pow2_scales";  // planted: the flag inverted for the twin only
  const auto runtime = open_with(spec);
  expect_failed(check_rows(*runtime), {"differ; first", "differ; first"});
}

TEST_CASE("a declared op's twin kernel with a planted mistake fails the op's check", "[ops][spec][host]") {
  const test::TempDir templates("metrale-spec-check");
  test::write_edited_templates(templates.path());  // the twin writes pow2 scales for fp32 and back
  const auto cache = std::filesystem::path(METRALE_BINARY_DIR) / "test-cache" / "verification" / "cache";
  const auto runtime = open_with(test::fp8_as_data_spec(), test::template_dir_env(templates.path()), cache.string());
  expect_failed(check_rows(*runtime), {"differ; first", "differ; first"});
}
