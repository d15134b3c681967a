// ops_spec_toml_test.cpp: an op declared in a TOML op file (src/ops/op_spec_toml.hpp):
// tests/data/ops/fp8_as_data.toml, the library's fp8_act_quant re-declared, picks, refuses,
// launches and explains as the library's declaration over the table of shapes and setups
// (support/fp8_spec_compare.hpp); each malformed file is refused naming the file, the line and the
// key (an unknown key, a wrong type, a TOML syntax error, an expression build_op refuses, a
// template file that cannot be read, a check shape naming no scalar); a role's source_file is
// read beside the op file as its kernel's source text.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "metrale/error.hpp"
#include "ops/op_spec_toml.hpp"
#include "support/fp8_spec_compare.hpp"
#include "support/temp_dir.hpp"

using namespace metrale;
using namespace metrale::test::fp8_compare;

namespace {

const std::filesystem::path kOpFile = std::filesystem::path(METRALE_SOURCE_DIR) / "tests/data/ops/fp8_as_data.toml";

std::string file_text() {
  std::ifstream in(kOpFile, std::ios::binary);
  REQUIRE(in.good());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The op file with `from` (which must occur) replaced by `to`.
std::string edited(const std::string& from, const std::string& to) {
  std::string text = file_text();
  const std::size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  text.replace(at, from.size(), to);
  return text;
}

// The 1-based line of `needle`'s first occurrence in `text`.
std::size_t line_of(const std::string& text, const std::string& needle) {
  const std::size_t at = text.find(needle);
  REQUIRE(at != std::string::npos);
  return 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<long>(at), '\n'));
}

void refused(const std::string& text, const std::string& needle) {
  INFO(needle);
  REQUIRE_THROWS_AS(ops::build_op_toml(text, "bad.toml", "/nonexistent"), ConfigError);
  REQUIRE_THROWS_WITH(ops::build_op_toml(text, "bad.toml", "/nonexistent"), Catch::Contains(needle));
}

}  // namespace

TEST_CASE("fp8_act_quant declared in a TOML op file runs as the library's declaration", "[ops][spec][toml]") {
  const ops::BuiltOp built = ops::build_op_file(kOpFile);
  CHECK(built.op.name == "fp8_act_quant_toml");
  REQUIRE(built.kernels.size() == 2);
  CHECK(built.kernels[1].twin_of == "fp8_act_quant");
  CHECK(built.sources.empty());  // the library's own template
  check_runs_as_library(built.op);
}

TEST_CASE("fp8_act_quant declared in a TOML op file explains as the library's declaration", "[ops][spec][toml]") {
  check_explains_as_library(ops::build_op_file(kOpFile).op);
}

TEST_CASE("a TOML op file is refused naming the file, the line and the key", "[ops][spec][toml]") {
  {
    const std::string text = edited("holds = \"twin.present\"", "holds = \"twin.present && ctas > 0\"");
    refused(text, "bad.toml:" + std::to_string(line_of(text, "ctas > 0")) + ": roles[1].guard[0].holds:");
    refused(text, "unknown name 'ctas'");
  }
  {
    const std::string text = edited("grid = [\"m\", \"ceil_div(k / 128, max(twin.groups, 1))\", 1]",
                                    "grid = [\"m\",\n  \"ceil_div(k / 128, max(twin.groups, 1)\", 1]");
    refused(text, "bad.toml:" + std::to_string(line_of(text, "  \"ceil_div")) + ": roles[1].grid[1]:");
    refused(text, "expected ')' at the end");
  }
  {
    const std::string text = edited("alignment = 8", "alignment = 8\nalign = 8");
    refused(text, "bad.toml:" + std::to_string(line_of(text, "align = 8")) + ": args[1].align: unknown key");
  }
  refused(edited("alignment = 8", "alignment = \"8\""), "args[1].alignment: expected a non-negative integer");
  refused(edited("dtype = \"e4m3\"", "dtype = \"fp8\""), "args[1].dtype: 'fp8' is no dtype");
  refused(edited("kind = \"output\"", "kind = \"out\""), "args[1].kind: 'out' is no kind");
  refused(edited("max = 1\n", "max = 1\n[[args\n"), "bad.toml:");  // TOML syntax
  refused(edited("max = 1\n", "max = 1\n[[args\n"), "TOML syntax");
  refused(edited("name = \"fp8_act_quant_toml\"\n", ""), "name: missing key");
  refused(edited("reason = \"not requested\"", "reason = \"\""), "roles[1].guard[1].reason: op spec");
  refused(edited("m = 5", "m = 5\nq = 1"), "check[1].q: op spec 'fp8_act_quant_toml': check shape 2 names 'q'");
}

TEST_CASE("a TOML op file's source_file is read beside it as the kernel's source", "[ops][spec][toml]") {
  const test::TempDir dir("metrale-op-file");
  std::ofstream(dir.path() / "my_quant.cuh") << "// my template\n";
  const std::string text =
      edited("source = \"fp8_act_quant.cuh\"\nexpression = \"metrale::kernels::per_token_group_quant_fp8_hopper",
             "source_file = \"my_quant.cuh\"\nexpression = \"metrale::kernels::per_token_group_quant_fp8_hopper");
  const ops::BuiltOp built = ops::build_op_toml(text, "mine.toml", dir.path());
  REQUIRE(built.sources.count("my_quant.cuh") == 1);
  CHECK(built.sources.at("my_quant.cuh") == "// my template\n");
  CHECK(built.kernels[1].source == "my_quant.cuh");
  REQUIRE_THROWS_WITH(ops::build_op_toml(text, "mine.toml", "/nonexistent"),
                      Catch::Contains("mine.toml:") && Catch::Contains("roles[1].source_file: cannot read"));
}
