// host_cuda_rewrite_test.cpp: the host JIT's rewrite of preprocessed CUDA (a pure function,
// src/host/cuda_source_rewrite.hpp): only the engine's lines change, every newline stays where it
// was, and what the host cannot run is named with its file and line.
#include <algorithm>
#include <catch2/catch.hpp>
#include <optional>
#include <string>

#include "host/cuda_source_rewrite.hpp"

namespace {

// The engine's file is "/work/k.cu"; anything else (the prelude, system headers) is not its.
metrale::host::CudaSourceRewrite rewrite(const std::string& text) {
  return metrale::host::rewrite_cuda_source(text, [](std::string_view path) -> std::optional<std::string> {
    if (path == "/work/k.cu") {
      return std::string("k.cu");
    }
    return std::nullopt;
  });
}

std::size_t lines(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

}  // namespace

TEST_CASE("extern __shared__ in the engine's lines becomes the prelude's pointer, the rest is untouched",
          "[host][jit][rewrite]") {
  const std::string in =
      "# 1 \"/usr/include/stdio.h\" 1 3\n"
      "extern thread_local int not_ours[];\n"
      "# 3 \"/work/k.cu\"\n"
      "extern thread_local __attribute__((aligned(16))) float s[];\n"
      "void f() { extern thread_local unsigned int\n"
      "   words[]\n"
      "   ; }\n"
      "template <class T> void g() { thread_local extern T rows[][33]; }\n";
  const metrale::host::CudaSourceRewrite out = rewrite(in);
  REQUIRE(out.refusal == "");
  CHECK(lines(out.text) == lines(in));
  CHECK_THAT(out.text, Catch::Contains("extern thread_local int not_ours[];"));
  CHECK_THAT(
      out.text,
      Catch::Contains("using metrale_extern_shared_type_0 = float (*); "
                      "static thread_local metrale_extern_shared_type_0 s = "
                      "::metrale::host::detail::extern_shared<metrale_extern_shared_type_0>(); "
                      "static const ::metrale::host::detail::ExternSharedHook metrale_extern_shared_hook_0"
                      "{+[]() { s = ::metrale::host::detail::extern_shared<metrale_extern_shared_type_0>(); }};\n"));
  CHECK_THAT(out.text, Catch::Contains("using metrale_extern_shared_type_1 = unsigned int (*); "
                                       "static thread_local metrale_extern_shared_type_1 words = "));
  CHECK_THAT(out.text,
             Catch::Contains("{ words = ::metrale::host::detail::extern_shared<metrale_extern_shared_type_1>(); "
                             "}};\n\n }"));
  CHECK_THAT(out.text, Catch::Contains("using metrale_extern_shared_type_2 = T (*)[ 33 ];"));
}

TEST_CASE("printf and assert in the engine's lines become the prelude's", "[host][jit][rewrite]") {
  const std::string in =
      "# 1 \"/work/k.cu\"\n"
      "void f(S s) { printf(\"%d\\n\", 1); ::printf(\"a\"); std::printf(\"b\"); s.printf(\"c\"); "
      "other::printf(\"d\");\n"
      "  (static_cast <bool> (x) ? void (0) : __assert_fail (\"x\", \"k.cu\", 2, __extension__ __PRETTY_FUNCTION__));\n"
      "  const char* t = \"printf(inside a string)\"; }\n"
      "# 1 \"/usr/include/c++/12/cstdio\" 3\n"
      "int y = printf(\"theirs\");\n";
  const metrale::host::CudaSourceRewrite out = rewrite(in);
  REQUIRE(out.refusal == "");
  CHECK(lines(out.text) == lines(in));
  CHECK_THAT(out.text, Catch::Contains("void f(S s) { ::metrale::host::detail::kernel_printf(\"%d\\n\", 1); "
                                       "::metrale::host::detail::kernel_printf(\"a\"); "
                                       "::metrale::host::detail::kernel_printf(\"b\"); s.printf(\"c\"); "
                                       "other::printf(\"d\");"));
  CHECK_THAT(out.text, Catch::Contains("::metrale::host::detail::kernel_assert_fail (\"x\""));
  CHECK_THAT(out.text, Catch::Contains("\"printf(inside a string)\""));
  CHECK_THAT(out.text, Catch::Contains("int y = printf(\"theirs\");"));
}

TEST_CASE("an explicit instantiation of a __global__ template loses the prelude's inline, a template keeps it",
          "[host][jit][rewrite]") {
  const std::string in =
      "# 1 \"/work/k.cu\"\n"
      "template <class T> inline void k(T* p) { *p = T(1); }\n"
      "template inline void k<float>(float* p);\n"
      "extern template\n  inline void k<int>(int* p);\n"
      "# 1 \"/usr/include/c++/12/bits/theirs.h\" 3\n"
      "template inline void theirs<int>(int*);\n";
  const metrale::host::CudaSourceRewrite out = rewrite(in);
  REQUIRE(out.refusal == "");
  CHECK(lines(out.text) == lines(in));
  CHECK_THAT(out.text, Catch::Contains("template <class T> inline void k(T* p)"));
  CHECK_THAT(out.text, Catch::Contains("template  void k<float>(float* p);"));
  CHECK_THAT(out.text, Catch::Contains("extern template\n   void k<int>(int* p);"));
  CHECK_THAT(out.text, Catch::Contains("template inline void theirs<int>(int*);"));
}

TEST_CASE("what the host cannot run is refused by name, file and line, only in the engine's lines",
          "[host][jit][rewrite]") {
  const std::string in =
      "# 1 \"/usr/include/x86_64-linux-gnu/bits/stdio2.h\" 3\n"
      "extern int f (int) __asm__ (\"\" \"__f_chk\");\n"
      "# 10 \"/work/k.cu\"\n"
      "__global__ void k(float* o, cudaTextureObject_t t) {\n"
      "  const char* s = R\"(asm(\"not code\")\n"
      "  still a string)\";\n"
      "  asm volatile(\"membar.gl;\");\n"
      "  o[0] = tex2D<float>(t, 0, 0) + tex1Dfetch(r, 1);\n"
      "  surf2Dwrite(1.0f, surf, 0, 0); child<<<1, 1>>>(); nvcuda::wmma::fill_fragment(f, 0);\n"
      "}\n";
  const metrale::host::CudaSourceRewrite out = rewrite(in);
  CHECK_THAT(out.refusal,
             Catch::StartsWith("the host backend cannot run a texture object (cudaTextureObject_t) at k.cu:10, "
                               "inline PTX (asm) at k.cu:13, a texture fetch (tex2D) at k.cu:14, "
                               "a texture fetch (tex1Dfetch) at k.cu:14, a surface access (surf2Dwrite) at "
                               "k.cu:15, a kernel launch inside a kernel (<<<...>>>, dynamic parallelism) at "
                               "k.cu:15, the warp matrix functions (nvcuda::wmma) at k.cu:15"));
  CHECK(out.refusal.find("stdio2") == std::string::npos);
}

TEST_CASE("an unterminated quote ends at its line: later lines keep their numbers, no edit carries a newline",
          "[host][jit][rewrite]") {
  // Found by fuzz_cuda_rewrite: the literal took its newline, so every later line was named one
  // too early, and an extern __shared__ edit around it wrote that newline twice.
  const metrale::host::CudaSourceRewrite out =
      rewrite("# 1 \"/work/k.cu\"\nchar c = 'x\nvoid f();\ntexture<float> t;\n");
  CHECK_THAT(out.refusal, Catch::Contains("a texture reference (texture<...>) at k.cu:3"));
  const metrale::host::CudaSourceRewrite shared =
      rewrite("# 1 \"/work/k.cu\"\nextern thread_local float R\"(\n)\" s[];\n");
  CHECK_THAT(shared.refusal, Catch::Contains("other than one unsized array"));
  const std::string split = "# 1 \"/work/k.cu\"\nvoid f() { std\n::\nprintf(\"x\"); }\n";
  const metrale::host::CudaSourceRewrite printed = rewrite(split);
  CHECK_THAT(printed.text, Catch::Contains("::metrale::host::detail::kernel_printf\n\n(\"x\")"));
  CHECK(lines(printed.text) == lines(split));
}

TEST_CASE("an extern __shared__ declaration other than one unsized array is refused by name", "[host][jit][rewrite]") {
  // In a function's body it stubs that function (host_function_stubs_test.cpp), naming it.
  const metrale::host::CudaSourceRewrite in_body =
      rewrite("# 1 \"/work/k.cu\"\nvoid f() {\n extern thread_local float x;\n}\n");
  REQUIRE(in_body.stubbed.size() == 1);
  CHECK_THAT(
      in_body.stubbed[0].reason,
      Catch::Contains("an extern __shared__ declaration other than one unsized array") && Catch::Contains("at k.cu:2"));
  CHECK_THAT(rewrite("# 1 \"/work/k.cu\"\nextern thread_local float a[], b[];\n").refusal,
             Catch::Contains("other than one unsized array") && Catch::Contains("at k.cu:1"));
  CHECK_THAT(rewrite("# 1 \"/work/k.cu\"\nextern thread_local float a[8];\n").refusal,
             Catch::Contains("other than one unsized array"));
}

TEST_CASE("a second extern __shared__ declaration of a name in the same scope goes, other scopes keep theirs",
          "[host][jit][rewrite]") {
  const std::string in =
      "# 1 \"/work/k.cu\"\n"
      "extern thread_local float s[];\n"
      "extern thread_local float s[];\n"
      "void f() { extern thread_local float s[]; }\n"
      "void g() { extern thread_local float s[]; extern thread_local float s[]; }\n";
  const metrale::host::CudaSourceRewrite out = rewrite(in);
  REQUIRE(out.refusal == "");
  CHECK(lines(out.text) == lines(in));
  // One pointer at namespace scope, one in f, one in g.
  std::size_t pointers = 0;
  for (std::size_t at = out.text.find("static thread_local"); at != std::string::npos;
       at = out.text.find("static thread_local", at + 1)) {
    ++pointers;
  }
  CHECK(pointers == 3);
  CHECK(out.text.find("extern thread_local") == std::string::npos);
}
