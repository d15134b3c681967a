// ops_silu_mul_fp8_quant_check_test.cpp: the SiLU-and-mul FP8 quant op's check hook
// (OpDeclaration::check, what selftest and verification run) on the host backend: every small
// shape's parent equals the CPU reference and its twin the parent, byte for byte; --role picks
// rows; without a device every row is a named skip; and a twin one bf16 ulp off in h (a template
// folder whose twin flips h's low bit, compiled by the host JIT) fails its rows, naming q, while
// the parent still passes.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "ground/embedded_files.hpp"
#include "metrale/ops/op_declaration.hpp"
#include "metrale/runtime.hpp"
#include "ops/silu_mul_fp8_quant_kernels.hpp"
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

// The embedded templates in `dir`, the twin's h one bf16 ulp off: its first element of every
// 8-element vector gets its low bit flipped after silu_mul_x8 (the parent's step is untouched).
void write_twin_off_by_an_ulp(const std::filesystem::path& dir) {
  bool edited = false;
  for (const EmbeddedFile& file : embedded_templates()) {
    std::string text(file.text);
    if (file.name == ops::kSiluMulTemplateFile) {
      const std::string anchor = "h[j] = silu_mul_x8(g[j], u[j]);";
      const std::size_t at = text.find(anchor);
      REQUIRE(at != std::string::npos);                         // the anchor moved: update the test
      REQUIRE(text.find(anchor, at + 1) == std::string::npos);  // and only the twin has it
      text.replace(at, anchor.size(), anchor + " h[j].x ^= 1u;");
      edited = true;
    }
    const std::filesystem::path path = dir / std::string(file.name);
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << text;
  }
  REQUIRE(edited);
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
    CHECK(rows[i].check == (i % 2 == 0 ? "bytes == reference" : "bytes == parent"));
    CHECK_THAT(rows[i].worst, Catch::Contains("q elements equal") && Catch::Contains("scales elements equal"));
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
  const test::TempDir temp("metrale-silu-check");
  write_twin_off_by_an_ulp(temp.path());
  RuntimeOptions options = test::isolated_runtime_options(BackendChoice::kHost, 132, "hopper");
  const std::string dir = temp.path().string();
  options.env = [dir](const char* name) -> std::optional<std::string> {
    return std::string_view(name) == "METRALE_TEMPLATE_DIR" ? std::optional<std::string>(dir) : std::nullopt;
  };
  // The host JIT's objects live in the build tree, so a rerun loads rather than compiles.
  options.cache_dir = (std::filesystem::path(METRALE_BINARY_DIR) / "test-cache" / "silu-check-fault").string();
  const auto runtime = Runtime::open(options);
  const std::vector<ops::CheckResult> rows = run_check(*runtime);
  REQUIRE(rows.size() == 6);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    INFO(describe(rows[i]));
    if (i % 2 == 0) {
      CHECK(rows[i].verdict == ops::CheckVerdict::kPassed);  // the parent's step is not edited
    } else {
      CHECK(rows[i].verdict == ops::CheckVerdict::kFailed);
      CHECK_THAT(rows[i].worst, Catch::Contains("differ; first q[") && Catch::Contains("the parent"));
    }
  }
}
