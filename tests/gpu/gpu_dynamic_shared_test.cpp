// gpu_dynamic_shared_test.cpp: a kernel using 64 KiB of dynamic shared memory on a CUDA device,
// compiled by NVRTC through the registry from tests/data/host/dynamic_shared.cuh (the same
// kernel the host test runs): past 48 KiB the launch fails unless the backend raised the
// function's limit first (cuFuncSetAttribute), so this passing is that opt-in working; the
// rotated output shows the block's threads shared one buffer.
#include <catch2/catch.hpp>
#include <vector>

#include "gpu/cuda_backend.hpp"
#include "metrale/gpu/kernel_launch.hpp"
#include "metrale/jit/kernel_registry.hpp"
#include "ref/bf16.hpp"
#include "support/dynamic_shared_source.hpp"

using namespace metrale;

TEST_CASE("GPU: 64 KiB of dynamic shared memory (the backend opts the kernel in past 48 KiB)",
          "[gpu][dynamic_shared]") {
  CudaBackendOpen opened = CudaBackend::open(0);
  REQUIRE(opened.backend);
  GpuBackend& gpu = *opened.backend;
  KernelRegistry registry(test::dynamic_shared_sources());
  const VariantId id =
      registry.declare({"dynamic_shared_rotate", test::kDynamicSharedSource, test::kDynamicSharedRotate, {}, false});
  const DeviceIndex device = registry.load(gpu);
  const KernelHandle handle = registry.handle(device, id);
  REQUIRE(handle.present());

  constexpr std::uint32_t kWords = 16384 + 5;  // 65,556 bytes
  constexpr std::uint32_t kBlocks = 264;
  const std::vector<float> input = ref::random_floats(std::size_t{kBlocks} * kWords, 91, -1.0F, 1.0F);
  const std::size_t bytes = input.size() * sizeof(float);
  const DevicePtr in = gpu.alloc(bytes);
  const DevicePtr out = gpu.alloc(bytes);
  gpu.copy_to_device(in, input.data(), bytes);
  const std::vector<float> poison(input.size(), -9.0F);
  gpu.copy_to_device(out, poison.data(), bytes);
  KernelLaunch(gpu, handle)
      .grid({kBlocks, 1, 1})
      .block({256, 1, 1})
      .dynamic_shared(kWords * 4)
      .arg_ptr(in)
      .arg_ptr(out)
      .arg_u32(kWords)
      .launch();
  gpu.synchronize(0);
  std::vector<float> got(input.size());
  gpu.copy_to_host(got.data(), out, bytes);
  std::size_t wrong = 0;
  for (std::uint32_t b = 0; b < kBlocks; ++b) {
    for (std::uint32_t i = 0; i < kWords; ++i) {
      wrong += got[std::size_t{b} * kWords + i] == input[std::size_t{b} * kWords + (i + 1) % kWords] ? 0 : 1;
    }
  }
  CHECK(wrong == 0);
  gpu.free(in);
  gpu.free(out);
}
