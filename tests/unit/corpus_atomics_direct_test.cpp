// corpus_atomics_direct_test.cpp: the corpus's atomics kernels (tests/data/corpus/atomics.cu and
// histogram.cu) compiled into this binary with the host prelude rather than by the host JIT, so
// the sanitizer builds instrument them too: under ThreadSanitizer (`make tsan`, tag
// [concurrency]) every atomic is seen as one, and a plain read-modify-write racing across blocks
// (blocks run on two OS threads) is a reported race; under ASan/UBSan (`make sanitize`) their
// accesses are checked. The same table rows and references as the host JIT's tests.
#include <catch2/catch.hpp>
#include <string>

#include "data/corpus/corpus_cases.hpp"
#include "host/host_backend.hpp"
#include "metrale/host/host_kernel.hpp"

// clang-format off
#include "metrale/host/cuda_host_prelude.hpp"
#include "data/corpus/atomics.cu"
#include "data/corpus/histogram.cu"
// clang-format on

TEST_CASE("the corpus's atomics kernels compiled into the test binary match their references",
          "[corpus][host][concurrency]") {
  metrale::HostBackendOptions options;
  options.worker_threads = 2;
  metrale::HostBackend gpu(options);
  gpu.add_kernel(metrale::make_host_kernel<&atomics_global>("corpus_atomics_global", {}));
  gpu.add_kernel(metrale::make_host_kernel<&atomics_shared>("corpus_atomics_shared", {}));
  gpu.add_kernel(metrale::make_host_kernel<&histogram_global>("corpus_histogram_global", {}));
  gpu.add_kernel(metrale::make_host_kernel<&histogram_shared>("corpus_histogram_shared", {}));
  const auto by_name = [&gpu](std::string_view kernel) {
    metrale::LoadRequest request;
    request.kernel = kernel;
    return gpu.load(request);
  };
  std::size_t ran = 0;
  for (const corpus::CorpusCase& c : corpus::corpus_cases()) {
    if (!c.atomics) {
      continue;
    }
    DYNAMIC_SECTION(c.name) {
      corpus::CaseRun run(gpu, by_name);
      const corpus::CaseResult result = c.run(run, c.test_elements, 99);
      CHECK(result.mismatch == "");
    }
    ++ran;
  }
  CHECK(ran == 4);
}
