// corpus_host_test.cpp: the corpus of kernels written as people write them for nvcc
// (tests/data/corpus/*.cu, the table in corpus_cases.hpp). Each case is a test of its own
// ("corpus on the host backend: <case>", tagged [corpus], the atomics ones also [concurrency]):
// its kernels load on the host backend through a KernelRegistry (the host JIT, the path an
// engine's kernels take) and its run matches its C++ reference. Every kernel of the table also
// compiles with NVRTC for sm_80, sm_90 and sm_100 through the same registry.
#include <catch2/catch.hpp>
#include <set>
#include <string>

#include "support/corpus_test_support.hpp"

namespace {

const bool kRegistered = corpus::test::register_host_cases(
    corpus::corpus_cases(), "corpus on the host backend: ", "[corpus][host][jit]", "[concurrency]");

}  // namespace

TEST_CASE("every corpus kernel compiles with NVRTC for sm_80, sm_90 and sm_100 through the registry",
          "[corpus][nvrtc][jit]") {
  REQUIRE(kRegistered);
  corpus::test::compile_cases_with_nvrtc(corpus::corpus_cases(), {"sm_80", "sm_90", "sm_100"});
}

TEST_CASE("the corpus table names each kernel once, from a file of the corpus", "[corpus]") {
  const corpus::Sources sources = corpus::corpus_sources(corpus::test::corpus_dir());
  std::set<std::string> names;
  for (const corpus::CorpusCase& c : corpus::corpus_cases()) {
    INFO(c.name);
    CHECK(c.run != nullptr);
    CHECK(c.test_elements > 0);
    CHECK(c.bench_elements >= c.test_elements);
    CHECK(c.name.find_first_of(",[]") == std::string::npos);  // a Catch test spec would split it
    for (const corpus::CorpusKernel& k : c.kernels) {
      CHECK(sources.contains(k.source));
      CHECK(names.insert(k.name).second);
    }
  }
}
