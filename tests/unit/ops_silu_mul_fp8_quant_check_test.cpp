// ops_silu_mul_fp8_quant_check_test.cpp: the SiLU-and-mul FP8 quant op's check hook
// (OpDeclaration::check, what selftest and verification run) on the host backend: every small
// shape's parent has the CPU reference's h and the FP8 reference's bytes of it, and its twin the
// parent's bytes; --role picks rows; without a device every row is a named skip. Planted faults
// (a template folder with one edit, compiled by the host JIT): a twin one bf16 ulp off in h fails
// its rows, naming q, while the parent still passes; h one ulp off in both kernels (what a
// device's expf may do) passes every row; h two ulps off fails the parent, naming h, and not the
// quant step asked for alone; a code byte flipped by the parent's quant step, h right, fails the
// parent, naming q.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <functional>
#include <string>

#include "metrale/ops/op_declaration.hpp"
#include "metrale/runtime.hpp"
#include "ops/op_kernels.hpp"
#include "ops/silu_mul_fp8_quant/silu_mul_fp8_quant.hpp"
#include "support/edited_templates.hpp"
#include "support/isolated_runtime.hpp"
#include "support/temp_dir.hpp"

using namespace metrale;

namespace {

constexpr std::string_view kOp = "silu_mul_fp8_quant";

std::vector<ops::CheckResult> run_check(const Runtime& runtime, std::string_view role = {}) {
  const ops::OpDeclaration& op = runtime.ops().get(kOp);
  REQUIRE(op.check);
  ops::CheckOptions options;
  options.role = role;
  return op.check(runtime.op_context(kOp), options);
}

std::string describe(const ops::CheckResult& r) {
  return fmt::format("{} {} {} [{}]: {} {}", r.role, r.kernel, r.shape, r.check, to_string(r.verdict), r.worst);
}

// The twin's h one bf16 ulp off: the first element of every 8-element vector gets its low bit
// flipped after silu_mul_x8 (the parent's step is untouched).
void write_twin_off_by_an_ulp(const std::filesystem::path& dir) {
  const std::string anchor = "h[j] = silu_mul_x8(g[j], u[j]);";
  test::write_templates_editing(dir, ops::kSiluMulTemplateFile, anchor, anchor + " h[j].x ^= 1u;");
}

// The parent's quant step (the FP8 op's shared kernel) flips the low bit of code q[0][0] after
// writing it: h is right, one code byte is not (the twin, which never calls that kernel, is not
// edited).
void write_first_code_flipped(const std::filesystem::path& dir) {
  const std::string anchor = "x_row_stride, scale_stride_m, scale_stride_g, pow2_scale != 0u);";
  test::write_templates_editing(dir, ops::kFp8QuantTemplateFile, anchor,
                                anchor +
                                    " if (blockIdx.x == 0u && blockIdx.y == 0u && threadIdx.x == 0u) {"
                                    " reinterpret_cast<unsigned char*>(q)[0] ^= 1u; }");
}

// The check's rows (for `role`, or all) on a host runtime over the embedded templates with one
// planted edit: `plant` writes them into a fresh folder. The host JIT's objects live in the build
// tree under `cache`, so a rerun loads rather than compiles.
std::vector<ops::CheckResult> planted_rows(const std::function<void(const std::filesystem::path&)>& plant,
                                           std::string_view cache, std::string_view role = {}) {
  const test::TempDir temp("metrale-silu-check");
  plant(temp.path());
  RuntimeOptions options = test::isolated_runtime_options(BackendChoice::kHost, 132, "hopper");
  options.env = [dir = temp.path().string()](const char* name) -> std::optional<std::string> {
    return std::string_view(name) == "METRALE_TEMPLATE_DIR" ? std::optional<std::string>(dir) : std::nullopt;
  };
  options.cache_dir = (std::filesystem::path(METRALE_BINARY_DIR) / "test-cache" / std::string(cache)).string();
  return run_check(*Runtime::open(options), role);
}

// Asserts `rows` holds `count` rows and runs `expect` on each, told whether it is the parent's
// (the rows alternate parent, twin when both roles are asked for), the row described on failure.
void expect_rows(const std::vector<ops::CheckResult>& rows, std::size_t count,
                 const std::function<void(const ops::CheckResult&, bool parent)>& expect) {
  REQUIRE(rows.size() == count);
  for (const ops::CheckResult& row : rows) {
    INFO(describe(row));
    expect(row, row.role == "parent");
  }
}

}  // namespace

TEST_CASE("silu_mul_fp8_quant's check: parent == reference and twin == parent at every small shape",
          "[ops][silu_mul][check]") {
  const auto runtime = Runtime::open(test::isolated_runtime_options(BackendChoice::kHost, 132, "hopper"));
  const std::vector<ops::CheckResult> rows = run_check(*runtime);
  REQUIRE(rows.size() == 6);  // three shapes, parent then twin
  for (std::size_t i = 0; i < rows.size(); ++i) {
    INFO(describe(rows[i]));
    CHECK(rows[i].verdict == ops::CheckVerdict::kPassed);
    CHECK(rows[i].role == (i % 2 == 0 ? "parent" : "twin"));
    CHECK(rows[i].kernel == (i % 2 == 0 ? ops::kSiluMulParentKernel : ops::kSiluMulTwinKernel));
    CHECK(rows[i].check == (i % 2 == 0 ? "h within 1 ulp, bytes == FP8-ref(h)" : "bytes == parent"));
    CHECK_THAT(rows[i].worst, Catch::Contains("q elements equal") && Catch::Contains("scales elements equal"));
    if (i % 2 == 0) {  // the host's expf is the reference's: h bit for bit
      CHECK_THAT(rows[i].worst, Catch::StartsWith("all ") && Catch::Contains("h elements equal the reference's bytes"));
    }
  }
  CHECK_THAT(rows[0].shape, Catch::Contains("gate_row_stride=1032 up_row_stride=1048"));
  CHECK_THAT(rows[2].shape, Catch::Contains("halves of [M][2K]"));
  CHECK_THAT(rows[4].shape, Catch::Contains("M=6") && Catch::Contains("col-major pow2"));
}

TEST_CASE("silu_mul_fp8_quant's check: a role picks its rows, no device skips each, named", "[ops][silu_mul][check]") {
  const auto runtime = Runtime::open(test::isolated_runtime_options(BackendChoice::kHost, 132, "hopper"));
  for (const std::string_view role : {"twin", "parent", "quant"}) {
    INFO(std::string(role));
    const std::vector<ops::CheckResult> rows = run_check(*runtime, role);
    REQUIRE(rows.size() == 3);
    for (const ops::CheckResult& row : rows) {
      INFO(describe(row));
      CHECK(row.role == (role == "twin" ? "twin" : "parent"));  // the quant step is the parent's
      CHECK(row.verdict == ops::CheckVerdict::kPassed);
    }
  }
  const auto none = Runtime::open(test::isolated_runtime_options(BackendChoice::kNone, 132, "hopper"));
  const std::vector<ops::CheckResult> skipped = run_check(*none);
  REQUIRE(skipped.size() == 6);
  for (const ops::CheckResult& row : skipped) {
    INFO(describe(row));
    CHECK(row.verdict == ops::CheckVerdict::kSkipped);
    CHECK_THAT(row.worst, Catch::StartsWith("no device"));
  }
}

TEST_CASE("silu_mul_fp8_quant's check fails a twin whose h is one bf16 ulp off", "[ops][silu_mul][check][override]") {
  expect_rows(planted_rows(write_twin_off_by_an_ulp, "silu-check-fault"), 6, [](const auto& row, bool parent) {
    if (parent) {
      CHECK(row.verdict == ops::CheckVerdict::kPassed);  // the parent's step is not edited
    } else {
      CHECK(row.verdict == ops::CheckVerdict::kFailed);
      CHECK_THAT(row.worst, Catch::Contains("differ; first q[") && Catch::Contains("the parent"));
    }
  });
}

TEST_CASE("silu_mul_fp8_quant's check passes h one bf16 ulp off in both kernels, as a device's expf may make it",
          "[ops][silu_mul][check][override]") {
  const auto plant = [](const std::filesystem::path& dir) { test::write_silu_h_off_by(dir, 1); };
  expect_rows(planted_rows(plant, "silu-check-h-1ulp"), 6, [](const auto& row, bool parent) {
    CHECK(row.verdict == ops::CheckVerdict::kPassed);
    if (parent) {
      // Some h differ, none by more than the ulp; the codes are the FP8 reference's of that h.
      CHECK_THAT(row.worst, Catch::Contains("differ from the reference, 0 by > 1 bf16 ulp") &&
                                Catch::Contains("(1 ulp)") && Catch::Contains("q elements equal FP8-ref(h)"));
    } else {
      CHECK_THAT(row.worst, Catch::Contains("q elements equal the parent"));
    }
  });
}

TEST_CASE("silu_mul_fp8_quant's check fails a parent whose h is two bf16 ulps off, naming h, not its quant step",
          "[ops][silu_mul][check][override]") {
  const auto plant = [](const std::filesystem::path& dir) { test::write_silu_h_off_by(dir, 2); };
  expect_rows(planted_rows(plant, "silu-check-h-2ulp", "parent"), 3, [](const auto& row, bool parent) {
    CHECK(parent);
    CHECK(row.verdict == ops::CheckVerdict::kFailed);
    CHECK_THAT(row.worst,
               Catch::StartsWith("h: ") && Catch::Contains("by > 1 bf16 ulp; worst h[") && Catch::Contains("(2 ulp)"));
  });
  // The quant step (the FP8 op's shared kernel) is held to the bytes of the h it was given.
  expect_rows(planted_rows(plant, "silu-check-h-2ulp", "quant"), 3, [](const auto& row, bool parent) {
    CHECK(parent);
    CHECK(row.verdict == ops::CheckVerdict::kPassed);
    CHECK(row.check == "bytes == FP8-ref(h)");
    CHECK_THAT(row.worst,
               Catch::StartsWith("h not judged here (h: ") && Catch::Contains("q elements equal FP8-ref(h)"));
  });
}

TEST_CASE("silu_mul_fp8_quant's check fails a parent that flips one code byte with h right, naming q",
          "[ops][silu_mul][check][override]") {
  expect_rows(planted_rows(write_first_code_flipped, "silu-check-code-flip"), 6, [](const auto& row, bool parent) {
    CHECK(row.verdict == ops::CheckVerdict::kFailed);
    CHECK_THAT(row.worst, Catch::Contains("1 of ") && Catch::Contains("differ; first q[0][0]"));
    if (parent) {
      CHECK_THAT(row.worst,
                 Catch::Contains("h elements equal the reference's bytes") && Catch::Contains("FP8-ref(h) 0x"));
    } else {
      CHECK_THAT(row.worst, Catch::Contains("the parent 0x"));
    }
  });
}
