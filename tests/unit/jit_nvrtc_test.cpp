// jit_nvrtc_test.cpp: real NVRTC compiles of the test templates (no GPU needed): every
// target's arch, lowered names, resources, PTX-only archs, errors as data.
#include <catch2/catch.hpp>

#include "jit/compiled_entry.hpp"
#include "jit/nvrtc_compiler.hpp"
#include "support/jit_test_support.hpp"

using namespace metrale;

TEST_CASE("a test template compiles for every target's arch", "[jit][nvrtc]") {
  const SourceSet sources = jit_test_support::test_sources();
  // hopper, gb10, b200, b300, and a generic device.
  const std::string arch = GENERATE(as<std::string>{}, "sm_90", "sm_121", "sm_100", "sm_103", "sm_89");
  const CompileResult result = compile_with_nvrtc(
      {"jit_test_kernels.cuh", &sources, {"jit_test::scale<128>", "jit_test::to_bf16<32>"}, arch, {}});
  INFO(result.log);
  REQUIRE(result.ok);
  REQUIRE(result.lowered_names.size() == 2);
  CHECK(result.lowered_names[0] == "_ZN8jit_test5scaleILi128EEEvPKfPffj");
  CHECK(result.lowered_names[1].find("to_bf16") != std::string::npos);
  CHECK(result.ptx.find(".entry " + result.lowered_names[0]) != std::string::npos);
  CHECK(result.ptx.find(".target " + arch) != std::string::npos);
  REQUIRE(result.cubin.size() > 4);
  CHECK(result.cubin.substr(0, 4) ==
        "\x7f"
        "ELF");
  const KernelResources* resources = result.resources_for(result.lowered_names[0]);
  REQUIRE(resources != nullptr);
  CHECK(resources->registers > 0);
  CHECK(resources->shared_bytes == 128 * 4);
  CHECK(result.compile_ms > 0.0);
}

TEST_CASE("a compute_XY arch yields PTX only", "[jit][nvrtc]") {
  const SourceSet sources = jit_test_support::test_sources();
  const CompileResult result =
      compile_with_nvrtc({"jit_test_kernels.cuh", &sources, {"jit_test::scale<64>"}, "compute_89", {}});
  INFO(result.log);
  REQUIRE(result.ok);
  CHECK(result.cubin.empty());
  CHECK(result.resources.empty());
  CHECK(result.ptx.find(".entry " + result.lowered_names[0]) != std::string::npos);
}

TEST_CASE("a syntax error is data: not ok, the log names and quotes the line", "[jit][nvrtc]") {
  const SourceSet sources = jit_test_support::test_sources();
  const CompileResult result = compile_with_nvrtc({"jit_test_broken.cuh", &sources, {"broken<32>"}, "sm_90", {}});
  REQUIRE_FALSE(result.ok);
  CHECK(result.ptx.empty());
  CHECK(result.cubin.empty());
  REQUIRE_FALSE(result.diagnostics.empty());
  CHECK(result.diagnostics[0].file == "jit_test_broken.cuh");
  CHECK(result.diagnostics[0].line == 6);
  CHECK(result.diagnostics[0].quoted_line == "  out[threadIdx.x] = BLOCK +;");
  CHECK_THAT(result.log, Catch::Contains("jit_test_broken.cuh(6)") && Catch::Contains("BLOCK +;"));
}

TEST_CASE("a source outside the set and a bad name expression are data too", "[jit][nvrtc]") {
  const SourceSet sources = jit_test_support::test_sources();
  const CompileResult missing = compile_with_nvrtc({"nope.cuh", &sources, {"x"}, "sm_90", {}});
  REQUIRE_FALSE(missing.ok);
  CHECK_THAT(missing.log, Catch::Contains("nope.cuh"));
  const CompileResult bad_expression =
      compile_with_nvrtc({"jit_test_kernels.cuh", &sources, {"jit_test::no_such_kernel<1>"}, "sm_90", {}});
  REQUIRE_FALSE(bad_expression.ok);
  CHECK_FALSE(bad_expression.log.empty());
}

TEST_CASE("the library's templates compile without the toolkit's headers, with the toolkit's type names",
          "[jit][nvrtc]") {
  SourceSet sources;
  sources.add_embedded_templates([](const char*) -> std::optional<std::string> { return std::nullopt; });
  // sm_80 takes metrale_types.cuh's integer e4m3 path, sm_90 the PTX conversion.
  const std::string arch = GENERATE(as<std::string>{}, "sm_80", "sm_90");
  const CompileResult result = compile_with_nvrtc(
      {"fp8_act_quant.cuh", &sources, {"metrale::kernels::per_token_group_quant_fp8<16, 1>"}, arch, {}});
  INFO(result.log);
  REQUIRE(result.ok);
  for (const std::string& option : result.options) {
    CHECK_FALSE(option.starts_with("-I"));
  }
  // The storage types keep the toolkit's global names, so lowered names (and bundles) are as before.
  REQUIRE(result.lowered_names.size() == 1);
  CHECK(result.lowered_names[0] ==
        "_ZN7metrale7kernels25per_token_group_quant_fp8ILj16ELj1EEEvPK13__nv_bfloat16P13__nv_fp8_e4m3Pfjjjjjj");
  CHECK((result.ptx.find("cvt.rn.satfinite.e4m3x2.f32") != std::string::npos) == (arch == "sm_90"));
}
