// gpu_corpus_test.cpp: the corpus of kernels written as people write them for nvcc
// (tests/data/corpus, the table in corpus_cases.hpp) on a CUDA device: every kernel compiled by
// NVRTC for the device through a KernelRegistry, each case run at its test size against the same
// C++ reference the host backend's tests use (tests/unit/corpus_host_test.cpp). The kernel files
// come from test_source_dir(): on a device the binary was built in another folder.
#include <catch2/catch.hpp>
#include <exception>
#include <string>

#include "data/corpus/corpus_cases.hpp"
#include "gpu/cuda_backend.hpp"
#include "support/test_source_dir.hpp"

TEST_CASE("GPU: every corpus kernel matches its reference on the device", "[gpu][corpus]") {
  metrale::CudaBackendOpen opened = metrale::CudaBackend::open(0);
  REQUIRE(opened.backend);
  metrale::GpuBackend& gpu = *opened.backend;
  corpus::CorpusRegistry registry(corpus::corpus_cases(),
                                  corpus::corpus_sources(metrale::test::test_source_dir() + "/tests/data/corpus"));
  registry.load(gpu);
  for (const corpus::CorpusCase& c : corpus::corpus_cases()) {
    INFO(c.name);
    try {
      corpus::CaseRun run(gpu, registry.handles());
      const corpus::CaseResult result = c.run(run, c.test_elements, 2024);
      CHECK(result.mismatch == "");
    } catch (const std::exception& error) {  // an absent kernel: the others still run
      FAIL_CHECK(error.what());
    }
  }
}
