// corpus_cg_readme_test.cpp: the README's "Your kernels on the CPU" example, run: an engine's CI
// test of its own cooperative-groups kernel on the host backend, through the public API only
// (Runtime, its KernelRegistry, KernelLaunch), against a double-precision reference. The example
// is the region between the two README markers below.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "data/host/host_test_support.hpp"
#include "metrale/metrale.hpp"
#include "support/corpus_cg_support.hpp"

namespace {

// README: C++ host CI example
// An engine's kernel on the CPU: `source` is the .cuh it compiles for its GPUs, as written for nvcc.
metrale::KernelHandle kernel_on_cpu(metrale::Runtime& runtime, const std::string& source) {
  metrale::KernelRegistry& registry = runtime.registry();  // opened with backend = BackendChoice::kHost
  registry.add_source("block_reduce.cuh", source);
  const metrale::VariantId id =
      registry.declare({"block_reduce", "block_reduce.cuh", "corpus_cg::block_reduce<256>", {}, false});
  // Compiled by the host JIT; absent (0) on a refusal, whose reason is registry.record(id, "host")->load_error.
  return registry.handle(registry.load(*runtime.backend()), id);
}
// Then, as on a GPU: metrale::KernelLaunch(*runtime.backend(), kernel).grid(..).block(..).arg_ptr(..).launch().
// README: end

}  // namespace

TEST_CASE("the README's host CI example runs an engine's cooperative-groups kernel on the CPU",
          "[corpus][cg][host][jit]") {
  constexpr std::uint32_t kBlocks = 4;
  metrale::RuntimeOptions options;
  options.backend = metrale::BackendChoice::kHost;
  options.host_worker_threads = 2;
  auto runtime = metrale::Runtime::open(options);
  const metrale::KernelHandle kernel = kernel_on_cpu(*runtime, corpus_cg_test::corpus_text("cg_block_reduce.cuh"));
  REQUIRE(kernel.present());
  metrale::GpuBackend& gpu = *runtime->backend();
  const std::vector<float> x = metrale_test::random_floats(kBlocks * 256, 99);  // one element per thread
  const metrale::DevicePtr dx = metrale_test::upload(gpu, x);
  const metrale::DevicePtr dsums =
      metrale_test::upload(gpu, std::vector<float>(kBlocks, std::numeric_limits<float>::quiet_NaN()));
  metrale::KernelLaunch(gpu, kernel)
      .grid({kBlocks, 1, 1})
      .block({256, 1, 1})
      .arg_ptr(dx)
      .arg_ptr(dsums)
      .arg_u32(kBlocks * 256)
      .launch();
  const std::vector<float> sums = metrale_test::download<float>(gpu, dsums, kBlocks);
  for (std::uint32_t b = 0; b < kBlocks; ++b) {
    double expect = 0.0;
    double magnitude = 0.0;
    for (std::uint32_t t = 0; t < 256; ++t) {
      expect += x[b * 256 + t];
      magnitude += std::fabs(x[b * 256 + t]);
    }
    INFO("block " << b);
    CHECK(std::fabs(sums[b] - expect) <= 1e-5 * magnitude);
  }
  gpu.free(dx);
  gpu.free(dsums);
}
