// jit_compile_report_test.cpp: the pure decisions and parsers of the JIT: ptxas resource
// lines, diagnostics with quoted lines, the compile-arch choice, which sources get the toolkit.
#include <catch2/catch.hpp>
#include <map>

#include "jit/compile_report.hpp"
#include "jit/compile_target.hpp"
#include "jit/compiled_entry.hpp"
#include "jit/nvrtc_compiler.hpp"

using namespace metrale;

TEST_CASE("ptxas -v lines become resources per entry function", "[jit][report]") {
  const std::string log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function '_Z1kILi64EEvPf' for 'sm_90'\n"
      "ptxas info    : Function properties for _Z1kILi64EEvPf\n"
      "ptxas         .     16 bytes stack frame, 4 bytes spill stores, 8 bytes spill loads\n"
      "ptxas info    : Used 10 registers, used 1 barriers, 256 bytes smem, 352 bytes cmem[0]\n"
      "ptxas info    : Compile time = 2.144 ms\n"
      "ptxas info    : Compiling entry function '_Z1kILi128EEvPf' for 'sm_90'\n"
      "ptxas info    : Function properties for _Z1kILi128EEvPf\n"
      "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 37 registers, 512 bytes smem\n";
  const auto resources = parse_ptxas_resources(log);
  REQUIRE(resources.size() == 2);
  CHECK(resources[0] == KernelResources{"_Z1kILi64EEvPf", 10, 4, 8, 256, 16});
  CHECK(resources[1] == KernelResources{"_Z1kILi128EEvPf", 37, 0, 0, 512, 0});
  CHECK(parse_ptxas_resources("garbage\nptxas info : Used x registers\n").empty());
}

TEST_CASE("diagnostics name file and line and quote the source", "[jit][report]") {
  SourceSet sources;
  sources.add_source("k.cuh", "line one\n  int x = ;\nline three\n");
  const std::string log =
      "k.cuh(2): error: expected an expression\n"
      "k.cuh(9): warning #177-D: variable declared but never referenced\n"
      "other.cuh(1): error: unknown\n"
      "At end of source: error: expected a \";\"\n";
  const auto diagnostics = parse_diagnostics(log, sources);
  REQUIRE(diagnostics.size() == 3);
  CHECK(diagnostics[0].file == "k.cuh");
  CHECK(diagnostics[0].line == 2);
  CHECK(diagnostics[0].severity == "error");
  CHECK(diagnostics[0].message == "expected an expression");
  CHECK(diagnostics[0].quoted_line == "  int x = ;");
  CHECK(diagnostics[1].severity == "warning");
  CHECK(diagnostics[1].quoted_line.empty());  // line 9 is past the end
  CHECK(diagnostics[2].quoted_line.empty());  // not in the set
  const std::string annotated = annotated_log(log, diagnostics);
  CHECK_THAT(annotated, Catch::Contains("k.cuh:2:   int x = ;"));
}

TEST_CASE("the compile arch is the device's SM when NVRTC lists it, else the newest PTX below", "[jit][arch]") {
  const std::vector<int> nvrtc13{75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121};
  struct Row {
    ComputeCapability device;
    std::optional<CompileTarget> expected;
  };
  const std::vector<Row> table{
      {{9, 0}, CompileTarget{"sm_90", ImageKind::kCubin}},
      {{12, 1}, CompileTarget{"sm_121", ImageKind::kCubin}},
      {{10, 0}, CompileTarget{"sm_100", ImageKind::kCubin}},
      {{10, 3}, CompileTarget{"sm_103", ImageKind::kCubin}},
      {{8, 9}, CompileTarget{"sm_89", ImageKind::kCubin}},
      {{9, 5}, CompileTarget{"compute_90", ImageKind::kPtx}},    // unknown SM between two known ones
      {{13, 0}, CompileTarget{"compute_121", ImageKind::kPtx}},  // newer than this NVRTC
      {{7, 0}, std::nullopt},                                    // older than everything listed
  };
  for (const Row& row : table) {
    INFO("device " << row.device.str());
    CHECK(choose_compile_target(row.device, nvrtc13) == row.expected);
  }
  CHECK(choose_compile_target({9, 0}, std::vector<int>{}) == std::nullopt);
}

TEST_CASE("NVRTC options always carry the invariants", "[jit][arch]") {
  const std::vector<std::string> cuda{"/cuda/include"};
  const auto options = nvrtc_options("sm_90", cuda, {"-DX=1"});
  for (const std::string required : {"-std=c++17", "--fmad=false", "-default-device", "--gpu-architecture=sm_90",
                                     "-I/cuda/include", "--ptxas-options=-v", "-DX=1"}) {
    CHECK(std::find(options.begin(), options.end(), required) != options.end());
  }
  const auto ptx_only = nvrtc_options("compute_89", {}, {});
  CHECK(std::find(ptx_only.begin(), ptx_only.end(), "--ptxas-options=-v") == ptx_only.end());
  CHECK(std::find(ptx_only.begin(), ptx_only.end(), "--fmad=false") != ptx_only.end());
  CHECK(nvrtc_version().find('-') != std::string::npos);
}

TEST_CASE("only a source that includes a file outside its set gets the toolkit's include dir", "[jit][arch]") {
  metrale::SourceSet sources;
  sources.add_embedded_templates([](const char*) -> std::optional<std::string> { return std::nullopt; });
  REQUIRE_FALSE(sources.names().empty());
  const std::optional<metrale::CudaToolkit> toolkit = metrale::CudaToolkit{{"/cuda/include"}, "cuda13000+0"};
  const auto toolkit_fn = [&]() -> const std::optional<metrale::CudaToolkit>& { return toolkit; };
  // Every shipped template compiles without the toolkit (metrale_types.cuh stands in for it), so
  // neither the toolkit's presence nor its path is in their options or keys.
  for (const std::string& name : sources.names()) {
    INFO(name);
    REQUIRE_FALSE(sources.reaches_outside(name));
    REQUIRE(metrale::toolkit_for(sources, name, toolkit_fn) == nullptr);
  }
  sources.add_source("engine.cuh", "#include \"middle.cuh\"\n");
  sources.add_source("middle.cuh", "#include <cuda_bf16.h>\n#include \"metrale_arith.cuh\"\n");
  REQUIRE(sources.reaches_outside("engine.cuh"));  // transitively, through middle.cuh
  REQUIRE(metrale::toolkit_for(sources, "engine.cuh", toolkit_fn) == &*toolkit);
  REQUIRE(metrale::toolkit_for(sources, "metrale_arith.cuh", toolkit_fn) == nullptr);
  REQUIRE_FALSE(sources.reaches_outside("not_a_member.cuh"));
}

TEST_CASE("a failed compile's reason is its first error, then the whole log", "[jit][report]") {
  const std::string log =
      "nvrtcCompileProgram: NVRTC_ERROR_COMPILATION\n"
      "k.cuh(3): error: identifier \"undefined_name\" is undefined\n"
      "k.cuh(4): error: expected a \";\"\n"
      "\n2 errors detected in the compilation of \"k.cuh\".\n";
  const std::string reason = compile_failure_reason(log);
  CHECK(reason.starts_with("compile failed: k.cuh(3): error: identifier \"undefined_name\" is undefined\n"));
  CHECK(reason.ends_with(log));                                     // every diagnostic, the second error too
  CHECK(first_error_line("warning: x\n  note\n") == "warning: x");  // no error line: the first line
  CHECK(compile_failure_reason("") == "compile failed: (the compiler left no log)");
  CHECK(compile_failure_reason(" \n") == "compile failed: (the compiler left no log)");
}
