// tests/support/slow_compile.hpp: a kernel source that takes NVRTC and g++ a long time to compile
// (seconds of constant evaluation, in chunks each under NVRTC's constexpr step limit), for the
// compile-deadline tests. Measured on the 2-core box (BENCHMARKS.md, "Compile deadlines"): each
// chunk costs NVRTC 13.0 about 45 ms on an idle machine (160 chunks: about 7 s; several times that
// under load), g++ 12 more (its constant evaluator is slower); both are cut at a 1 s limit.
#pragma once

#include <string>

namespace metrale::test {

inline constexpr const char* kSlowSourceName = "deadline_slow.cuh";
inline constexpr const char* kSlowExpression = "deadline_slow::slow_kernel<1>";

// `chunks` pieces of 400 x 400 loop steps each; `salt` makes the text (and so its key) unique.
inline std::string slow_source(int chunks, unsigned long long salt) {
  return "// salt " + std::to_string(salt) +
         "\n"
         "namespace deadline_slow {\n"
         "constexpr unsigned long long part(unsigned long long c) {\n"
         "  unsigned long long s = 0;\n"
         "  for (unsigned long long i = 0; i < 400; ++i) {\n"
         "    for (unsigned long long j = 0; j < 400; ++j) { s += (i ^ j ^ c) % 7; }\n"
         "  }\n"
         "  return s;\n"
         "}\n"
         "template <unsigned long long C> struct Chunk { static constexpr unsigned long long v = part(C); };\n"
         "template <unsigned long long N, unsigned long long... C> struct Sum {\n"
         "  static constexpr unsigned long long v = Sum<N - 1, N - 1, C...>::v;\n"
         "};\n"
         "template <unsigned long long... C> struct Sum<0, C...> {\n"
         "  static constexpr unsigned long long v = (Chunk<C>::v + ... + 0ull);\n"
         "};\n"
         "template <int K> __global__ void slow_kernel(unsigned long long* out) { out[0] = Sum<" +
         std::to_string(chunks) +
         ">::v + K; }\n"
         "}  // namespace deadline_slow\n";
}

}  // namespace metrale::test
