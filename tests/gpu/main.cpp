// main.cpp: the runner of the GPU tests (tests/gpu). Without a CUDA device (no driver, no
// device, a failing context) it says why and exits 77, which CTest reports as skipped
// (SKIP_RETURN_CODE in tests/CMakeLists.txt); with one it runs every Catch2 test case.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>

#include "gpu/cuda_backend.hpp"

namespace {

constexpr int kSkipped = 77;

}  // namespace

int main(int argc, char* argv[]) {
  {
    const metrale::CudaBackendOpen opened = metrale::CudaBackend::open(0);
    if (!opened.backend) {
      std::fprintf(stderr, "metrale_gpu_tests: skipped: no CUDA device (%s)\n", opened.reason.c_str());
      return kSkipped;
    }
    std::fprintf(stderr, "metrale_gpu_tests: on %s\n", opened.backend->describe().c_str());
  }
  return Catch::Session().run(argc, argv);
}
