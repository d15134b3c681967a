// host_function_stubs_test.cpp: the pure parts of "a file's kernels load independently" on the
// host backend: where the engine's functions keep their bodies (src/host/function_bodies.hpp),
// the stubs the rewrite puts in place of a body the host cannot build (cuda_source_rewrite.hpp),
// and the engine lines and missing stubs read back from GCC's and Clang's logs
// (compile_log_locations.hpp).
#include <algorithm>
#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <vector>

#include "host/compile_log_locations.hpp"
#include "host/cuda_source_rewrite.hpp"
#include "host/function_bodies.hpp"
#include "host/stubbed_compile.hpp"

namespace {

// The engine's file is "/w/src/k.cu"; anything else (the prelude, system headers, the unit) is not its.
std::optional<std::string> engine_name(std::string_view path) {
  return path == "/w/src/k.cu" ? std::optional<std::string>("k.cu") : std::nullopt;
}

std::vector<std::string> body_names(const std::string& text) {
  const metrale::host::ScannedUnit unit = metrale::host::scan_engine_tokens(text, engine_name);
  std::vector<std::string> names;
  for (const metrale::host::FunctionBody& body : metrale::host::find_function_bodies(text, unit.tokens)) {
    names.push_back(body.name + "@" + std::to_string(unit.tokens[body.name_token].line));
  }
  return names;
}

std::size_t lines(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

}  // namespace

TEST_CASE("the engine's function bodies are found in the forms people write, and nothing else is one",
          "[host][jit][rewrite]") {
  const std::string text =
      "# 1 \"/w/src/k.cu\"\n"
      "namespace ns { struct Tile { float v[4];\n"                                            // 1: namespace, class
      "  inline float sum() const { auto f = [](float x) { return x; }; return f(v[0]); }\n"  // 2
      "  float operator()(int i) const noexcept { return v[i]; }\n"                           // 3
      "  operator float*() { return v; }\n"                                                   // 4
      "  Tile(int a) : v{}, n(a), m{2} {}\n"  // 5: brace init last: not read
      "  Tile() : n(1), m(2) { }\n"           // 6
      "  int n; int m; };\n"                  // 7
      "float Tile_free(int x);\n"             // 8: a declaration
      "}\n"
      "inline auto trailing(int x) -> decltype(x + 1) { return x + 1; }\n"  // 10
      "template <int N> __attribute__((noinline)) float scaled(float x) __attribute__((cold)) { return x * N; }\n"
      "float ns::Tile::sum2() const { if (n) { return 1; } return 0; }\n"  // 12
      "int table[] = {1, 2, 3};\n"                                         // 13: an initializer
      "extern \"C\" { void c_api(void) { } }\n"                            // 14
      "# 1 \"/usr/include/header.h\"\n"
      "inline int theirs() { return 0; }\n";
  CHECK(body_names(text) == std::vector<std::string>{"sum@2", "operator()@3", "operator float*@4", "Tile@6",
                                                     "trailing@10", "scaled@11", "ns::Tile::sum2@12", "c_api@14"});
}

TEST_CASE("a construct the host cannot run stubs its function, outside any body it refuses the unit",
          "[host][jit][rewrite]") {
  const std::string in =
      "# 1 \"/w/src/k.cu\"\n"
      "inline unsigned lane() {\n"
      "  unsigned l; asm volatile(\"mov.u32 %0, %%laneid;\" : \"=r\"(l));\n"
      "  extern thread_local float buf[];\n"
      "  return l;\n"
      "}\n"
      "inline void k(float* o) { o[0] = 1.0f; }\n";
  const metrale::host::CudaSourceRewrite out = metrale::host::rewrite_cuda_source(in, engine_name);
  CHECK(out.refusal.empty());
  REQUIRE(out.stubbed.size() == 1);
  CHECK(out.stubbed[0].name == "lane");
  CHECK(out.stubbed[0].where == "k.cu:1");
  CHECK(out.stubbed[0].reason == "inline PTX (asm) at k.cu:2");
  CHECK(lines(out.text) == lines(in));
  CHECK(out.text.find("asm") == std::string::npos);  // the body is gone, its extern __shared__ edit too
  CHECK(out.text.find("extern_shared") == std::string::npos);
  CHECK_THAT(out.text, Catch::Contains("{ void metrale_host_unavailable_0(); metrale_host_unavailable_0();"));
  CHECK_THAT(out.text, Catch::Contains("inline void k(float* o) { o[0] = 1.0f; }"));

  // A line marker inside a stubbed body (an #include there) stays, so later lines keep their names.
  const std::string marked =
      "# 1 \"/w/src/k.cu\"\n"
      "inline void g() {\n"
      "  asm(\"trap;\");\n"
      "# 1 \"/usr/include/inc.h\" 1\n"
      "int included;\n"
      "# 4 \"/w/src/k.cu\" 2\n"
      "}\n";
  const metrale::host::CudaSourceRewrite kept = metrale::host::rewrite_cuda_source(marked, engine_name);
  REQUIRE(kept.stubbed.size() == 1);
  CHECK_THAT(kept.text, Catch::Contains("\n\n# 1 \"/usr/include/inc.h\" 1\n\n# 4 \"/w/src/k.cu\" 2\n}"));
  CHECK(lines(kept.text) == lines(marked));

  // A texture at namespace scope is no function's: the unit is refused, naming every construct.
  const metrale::host::CudaSourceRewrite refused = metrale::host::rewrite_cuda_source(
      "# 1 \"/w/src/k.cu\"\ntexture<float, 1> t;\ninline void f() { asm(\"trap;\"); }\n", engine_name);
  CHECK_THAT(refused.refusal, Catch::Contains("a texture reference (texture<...>) at k.cu:1") &&
                                  Catch::Contains("inline PTX (asm) at k.cu:2"));
}

TEST_CASE("a line the compiler failed on stubs the function holding it, one in no body is unplaced",
          "[host][jit][rewrite]") {
  const std::string in =
      "# 1 \"/w/src/k.cu\"\n"
      "int helper(int a) {\n"
      "  return __dp4a(a, a, 0);\n"
      "}\n"
      "bad_type global;\n"
      "int other(int a) { return a; }\n";
  const std::vector<metrale::host::FailedLine> failed{
      {"k.cu", 2, "k.cu:2:10: error: '__dp4a' was not declared", {}},
      {"k.cu", 4, "k.cu:4:1: error: 'bad_type' does not name a type", {}},
      {"other.cu", 2, "not this file", {}}};
  const metrale::host::CudaSourceRewrite out = metrale::host::rewrite_cuda_source(in, engine_name, failed);
  REQUIRE(out.stubbed.size() == 1);
  CHECK(out.stubbed[0].name == "helper");
  CHECK(out.stubbed[0].reason == "k.cu:2:10: error: '__dp4a' was not declared");
  REQUIRE(out.unplaced.size() == 2);
  CHECK(out.unplaced[0].line == 4);
  CHECK(out.unplaced[1].file == "other.cu");
  CHECK(out.text.find("__dp4a") == std::string::npos);
  CHECK_THAT(out.text, Catch::Contains("int other(int a) { return a; }"));

  // An instantiation asked for in no body (an explicit one, at namespace scope): the chain's next
  // engine line in a body is stubbed, the template's own.
  const std::vector<metrale::host::FailedLine> explicit_one{
      {"k.cu", 4, "k.cu:5:20: error: bad (instantiated at k.cu:4)", {{"k.cu", 5}}}};
  const metrale::host::CudaSourceRewrite inner = metrale::host::rewrite_cuda_source(in, engine_name, explicit_one);
  REQUIRE(inner.stubbed.size() == 1);
  CHECK(inner.stubbed[0].name == "other");
  CHECK(inner.unplaced.empty());
}

TEST_CASE("a compiler's log gives each error's outermost engine line and a link's missing stubs",
          "[host][jit][rewrite]") {
  // GCC 12: the chain before the error, innermost first; a member function's error has none.
  const std::string gcc =
      "/w/src/k.cu: In member function 'int S::m()':\n"
      "/w/src/k.cu:2:29: error: '__dp4a' was not declared in this scope\n"
      "    2 | struct S { int m() { return __dp4a(1, 2, 3); } };\n"
      "/w/src/k.cu: In instantiation of 'int dot4(T, T) [with T = int]':\n"
      "/w/src/k.cu:4:19:   required from here\n"
      "/w/src/k.cu:1:54: error: '__dp4a' was not declared in this scope\n"
      "/w/prelude.hpp: In instantiation of 'T shfl(T) [with T = X]':\n"
      "/w/src/k.cu:7:5:   required from 'void g()'\n"
      "/w/unit.cpp:30:5:   required from here\n"
      "/w/prelude.hpp:9:1: error: no match\n"
      "/w/src/k.cu:9:3: warning: unused variable 'q'\n";
  const std::vector<metrale::host::FailedLine> from_gcc =
      metrale::host::failed_engine_lines(gcc, engine_name, "/w/src/");
  REQUIRE(from_gcc.size() == 2);  // the third error's outermost line is the unit's: not the engine's to stub
  CHECK(from_gcc[0].line == 2);
  CHECK(from_gcc[0].reason == "k.cu:2:29: error: '__dp4a' was not declared in this scope");
  CHECK(from_gcc[1].line == 4);
  CHECK(from_gcc[1].reason == "k.cu:1:54: error: '__dp4a' was not declared in this scope (instantiated at k.cu:4)");
  REQUIRE(from_gcc[1].inner.size() == 1);  // the chain inward: the template's own line
  CHECK(from_gcc[1].inner[0].line == 1);

  // Clang: the chain after the error.
  const std::string clang =
      "/w/src/k.cu:1:48: error: use of undeclared identifier '__dp4a'\n"
      "/w/src/k.cu:3:10: note: in instantiation of function template specialization 'dot4<int>' requested here\n"
      "/w/src/k.cu:6:10: note: in instantiation of function template specialization 'outer<int>' requested here\n"
      "/w/src/k.cu:8:1: note: candidate function not viable\n"
      "2 errors generated.\n";
  const std::vector<metrale::host::FailedLine> from_clang =
      metrale::host::failed_engine_lines(clang, engine_name, "/w/src/");
  REQUIRE(from_clang.size() == 1);
  CHECK(from_clang[0].line == 6);

  // A line of many kilobytes (a template's name) is read by its head, without recursing over it.
  const std::string long_line = "/w/src/k.cu:5:1: error: no match for " + std::string(200000, 'T') + "\n";
  const std::vector<metrale::host::FailedLine> from_long =
      metrale::host::failed_engine_lines(long_line, engine_name, "/w/src/");
  REQUIRE(from_long.size() == 1);
  CHECK(from_long[0].line == 5);

  const std::string link =
      "/usr/bin/ld: /tmp/x.o: in function `entry':\n"
      "x.cpp:(.text+0x5): undefined reference to `(anonymous namespace)::metrale_host_unavailable_3()'\n"
      "x.cpp:(.text+0x9): undefined reference to `ns::metrale_host_unavailable_0()'\n"
      "x.cpp:(.text+0xd): undefined reference to `ns::metrale_host_unavailable_3()'\n"
      "ld.lld: error: undefined symbol: metrale_host_unavailable_12()\n"
      "x.cpp:(.text+0x11): undefined reference to `unrelated_7()'\n";
  CHECK(metrale::host::unavailable_stubs_called(link) == std::vector<std::size_t>{0, 3, 12});
  CHECK(metrale::host::unavailable_stubs_called("/w/src/k.cu:1:1: error: metrale_host_unavailable_5").empty());
}

TEST_CASE("the stub rounds end built, refused naming a reached stub, or with the compiler's log, within the bound",
          "[host][jit][rewrite]") {
  using metrale::host::CompilerRun;
  using Outcome = metrale::host::StubbedCompile::Outcome;
  std::string unit = "# 1 \"/w/src/k.cu\"\n";
  for (int f = 0; f < 10; ++f) {  // f<N> on line N + 1
    unit += "inline int f" + std::to_string(f) + "(int a) { return a; }\n";
  }
  // A compiler that fails on the lines in `errors`, in turn, then answers `last`.
  auto compiler = [](std::vector<std::string> logs, int& runs) {
    return [logs = std::move(logs), &runs](const std::string&) -> std::optional<CompilerRun> {
      const std::size_t at = static_cast<std::size_t>(runs++);
      CompilerRun run;
      run.output = at < logs.size() ? logs[at] : logs.back();
      run.exit_code = run.output.empty() ? 0 : 1;
      return run;
    };
  };
  const std::string error_f1 = "/w/src/k.cu:2:30: error: bad in f1\n";
  const std::string reached_0 = "x.cpp:(.text+0x5): undefined reference to `metrale_host_unavailable_0()'\n";

  int runs = 0;
  metrale::host::StubbedCompile built =
      metrale::host::compile_with_stubs(unit, engine_name, "/w/src/", "k", compiler({error_f1, ""}, runs));
  CHECK(built.outcome == Outcome::kBuilt);
  CHECK(runs == 2);
  REQUIRE(built.stubbed.size() == 1);
  CHECK(built.stubbed[0].name == "f1");

  runs = 0;
  const metrale::host::StubbedCompile refused =
      metrale::host::compile_with_stubs(unit, engine_name, "/w/src/", "k", compiler({error_f1, reached_0}, runs));
  CHECK(refused.outcome == Outcome::kRefused);
  CHECK(refused.refusal ==
        "it needs f1 at k.cu:2 (k.cu:2:30: error: bad in f1), which the host backend cannot build; a "
        "GPU runs it (the registry's NVRTC build), and the file's other kernels still load here");

  // The requested kernel's own body: the compiler's first log, whole.
  runs = 0;
  const metrale::host::StubbedCompile own = metrale::host::compile_with_stubs(unit, engine_name, "/w/src/", "ns::f1<3>",
                                                                              compiler({error_f1, reached_0}, runs));
  CHECK(own.outcome == Outcome::kCompilerFailed);
  REQUIRE(own.failure.has_value());
  CHECK(own.failure->output == error_f1);

  // An error in no function's body stubs nothing: one compile, its log.
  runs = 0;
  const std::string outside = "/w/src/k.cu:40:1: error: after every body\n";
  const metrale::host::StubbedCompile stuck =
      metrale::host::compile_with_stubs(unit, engine_name, "/w/src/", "k", compiler({outside}, runs));
  CHECK(stuck.outcome == Outcome::kCompilerFailed);
  CHECK(runs == 1);

  // A compiler that fails on a new function every time: 1 + kStubRounds compiles at most.
  runs = 0;
  std::vector<std::string> every;
  for (int f = 0; f < 10; ++f) {
    every.push_back("/w/src/k.cu:" + std::to_string(f + 2) + ":20: error: bad in f" + std::to_string(f) + "\n");
  }
  const metrale::host::StubbedCompile bounded =
      metrale::host::compile_with_stubs(unit, engine_name, "/w/src/", "k", compiler(every, runs));
  CHECK(bounded.outcome == Outcome::kCompilerFailed);
  CHECK(runs == 1 + metrale::host::kStubRounds);
}
