// jit_cuda_driver_test.cpp: the dlopen'ed driver without a GPU: a "no device" state with a
// reason, never a crash; with a device (a lent GPU), the backend reports sane attributes.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "gpu/cuda_backend.hpp"
#include "gpu/cuda_driver.hpp"
#include "jit/compiled_entry.hpp"
#include "jit/compiled_memory_cache.hpp"
#include "metrale/gpu/kernel_launch.hpp"
#include "metrale/jit/kernel_registry.hpp"
#include "support/jit_test_support.hpp"

using namespace metrale;

TEST_CASE("the CUDA driver loads or says why not", "[jit][cuda]") {
  const CudaDriverStatus& status = CudaDriver::load();
  REQUIRE(&status == &CudaDriver::load());  // loaded once
  const CudaBackendOpen opened = CudaBackend::open(0);
  if (!status.available()) {
    // Each "no device" path names its cause.
    const bool named = status.reason.find("libcuda.so.1") != std::string::npos ||
                       status.reason.find("cuInit") != std::string::npos ||
                       status.reason.find("no device") != std::string::npos ||
                       status.reason.find("cuDeviceGetCount") != std::string::npos;
    CHECK(named);
    CHECK(status.driver == nullptr);
    CHECK(opened.backend == nullptr);
    CHECK(opened.reason == status.reason);
    return;
  }
  CHECK(status.device_count > 0);
  // Optional entry points every CUDA 12+ driver has: the cluster launch and its occupancy query.
  CHECK(status.driver->launch_kernel_ex != nullptr);
  CHECK(status.driver->occupancy_max_active_clusters != nullptr);
  REQUIRE(opened.backend != nullptr);
  CHECK(opened.backend->compute_capability().has_value());
  CHECK(opened.backend->sm_count().value_or(0) > 0);
  CHECK(opened.backend->device_key() == "cuda:0");
  const CudaBackendOpen beyond = CudaBackend::open(status.device_count);
  CHECK(beyond.backend == nullptr);
  CHECK_THAT(beyond.reason, Catch::Contains("does not exist"));
}

TEST_CASE("on a device, the registry loads a module and a test kernel computes the right values", "[jit][cuda]") {
  CudaBackendOpen opened = CudaBackend::open(0);
  if (opened.backend == nullptr) {
    SUCCEED("no CUDA device: " << opened.reason);
    return;
  }
  CudaBackend& gpu = *opened.backend;
  KernelRegistry::Options options;
  options.memory = std::make_shared<CompiledMemoryCache>();
  KernelRegistry registry(jit_test_support::test_sources(), options);
  const VariantId id =
      registry.declare({"scale", "jit_test_kernels.cuh", "jit_test::scale<64>", KernelParams{64, 0, 0}, false});
  const DeviceIndex device = registry.load(gpu);
  const KernelHandle kernel = registry.handle(device, id);
  INFO(registry.record(id, *KernelRegistry::arch_for(gpu))->entry->log);
  REQUIRE(kernel.present());

  constexpr unsigned kCount = 1000;  // not a multiple of the block: the tail is guarded
  std::mt19937 random(1234);
  std::uniform_real_distribution<float> uniform(-4.0f, 4.0f);
  std::vector<float> input(kCount);
  for (float& value : input) {
    value = uniform(random);
  }
  const float factor = 0.37f;
  const DevicePtr in = gpu.alloc(kCount * sizeof(float));
  const DevicePtr out = gpu.alloc((kCount + 64) * sizeof(float));
  std::vector<float> output(kCount + 64, std::numeric_limits<float>::quiet_NaN());
  gpu.copy_to_device(in, input.data(), kCount * sizeof(float));
  gpu.copy_to_device(out, output.data(), output.size() * sizeof(float));
  KernelLaunch(gpu, kernel)
      .grid({(kCount + 63) / 64, 1, 1})
      .block({64, 1, 1})
      .arg_ptr(in)
      .arg_ptr(out)
      .arg_f32(factor)
      .arg_u32(kCount)
      .launch();
  gpu.synchronize(0);
  gpu.copy_to_host(output.data(), out, output.size() * sizeof(float));
  gpu.free(in);
  gpu.free(out);
  const float multiplier = factor * 64.0f;
  for (unsigned i = 0; i < kCount; ++i) {
    INFO("element " << i);
    REQUIRE(output[i] == input[i] * multiplier);
  }
  CHECK(std::isnan(output[kCount]));  // past n: never written
  CHECK(gpu.loaded_module_count() == 1);
}
