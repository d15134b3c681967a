// host_dynamic_shared_test.cpp: dynamic shared memory on the host backend. A launch's
// dynamic_shared_bytes (here past the 48 KiB a GPU grants without opting in) is one buffer per
// block, shared by its threads and separate from every other block running at the same time on
// another worker; it starts as 0xCD, not zeros; a kernel that uses it with 0 bytes asked for, and
// a request past 227 KiB, and a kernel writing past what its launch asked for stop the launch with
// a message naming the mistake.
#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "data/host/host_test_support.hpp"
#include "host/host_backend.hpp"
#include "jit/compiled_entry.hpp"
#include "metrale/error.hpp"
#include "metrale/gpu/kernel_launch.hpp"
#include "metrale/jit/kernel_registry.hpp"
#include "support/dynamic_shared_source.hpp"

// clang-format off
#include "metrale/host/cuda_host_prelude.hpp"
#include "data/host/dynamic_shared.cuh"
// clang-format on

using Catch::Matchers::Contains;
using namespace metrale;
using namespace metrale_test;

namespace {

constexpr std::uint32_t kWords = 16384 + 5;  // 65,556 bytes: past 48 KiB, not a power of two
constexpr std::uint32_t kBlocks = 6;

std::unique_ptr<HostBackend> make_backend() {
  HostBackendOptions options;
  options.worker_threads = 3;  // blocks run side by side, each on its own worker's buffer
  auto gpu = std::make_unique<HostBackend>(options);
  gpu->add_kernel(make_host_kernel<&dynamic_shared_rotate>("dynamic_shared_rotate", {}));
  gpu->add_kernel(make_host_kernel<&dynamic_shared_first_bytes>("dynamic_shared_first_bytes", {}));
  return gpu;
}

std::string launch_rotate(HostBackend& gpu, DevicePtr in, DevicePtr out, std::uint32_t words, std::uint32_t bytes) {
  try {
    KernelLaunch(gpu, load_kernel(gpu, "dynamic_shared_rotate"))
        .grid({kBlocks, 1, 1})
        .block({96, 1, 1})
        .dynamic_shared(bytes)
        .arg_ptr(in)
        .arg_ptr(out)
        .arg_u32(words)
        .launch();
  } catch (const BackendError& error) {
    return error.what();
  }
  return {};
}

}  // namespace

TEST_CASE("host dynamic shared memory: one buffer per block, shared by its threads", "[host][dynamic_shared]") {
  const std::unique_ptr<HostBackend> backend = make_backend();
  HostBackend& gpu = *backend;
  const std::vector<float> input = random_floats(std::size_t{kBlocks} * kWords, 4242);
  const DevicePtr in = upload(gpu, input);
  const DevicePtr out = upload(gpu, std::vector<float>(input.size(), -9.0F));
  REQUIRE(launch_rotate(gpu, in, out, kWords, kWords * 4).empty());
  const std::vector<float> got = download<float>(gpu, out, input.size());
  std::size_t wrong = 0;
  for (std::uint32_t b = 0; b < kBlocks; ++b) {
    for (std::uint32_t i = 0; i < kWords; ++i) {
      wrong += got[std::size_t{b} * kWords + i] == input[std::size_t{b} * kWords + (i + 1) % kWords] ? 0 : 1;
    }
  }
  CHECK(wrong == 0);
}

TEST_CASE("host dynamic shared memory starts as 0xCD, not zeros", "[host][dynamic_shared]") {
  const std::unique_ptr<HostBackend> backend = make_backend();
  HostBackend& gpu = *backend;
  // A first launch leaves its own words behind; the next block must not see them.
  const std::vector<float> input = random_floats(std::size_t{kBlocks} * kWords, 77);
  const DevicePtr in = upload(gpu, input);
  const DevicePtr scratch = upload(gpu, std::vector<float>(input.size(), 0.0F));
  REQUIRE(launch_rotate(gpu, in, scratch, kWords, kWords * 4).empty());
  const DevicePtr out = upload(gpu, std::vector<unsigned char>(std::size_t{kBlocks} * 16, 0x11));
  KernelLaunch(gpu, load_kernel(gpu, "dynamic_shared_first_bytes"))
      .grid({kBlocks, 1, 1})
      .block({32, 1, 1})
      .dynamic_shared(1024)
      .arg_ptr(out)
      .launch();
  for (const unsigned char byte : download<unsigned char>(gpu, out, std::size_t{kBlocks} * 16)) {
    CHECK(int{byte} == 0xCD);
  }
}

TEST_CASE("host dynamic shared memory: the launch's mistakes are named", "[host][dynamic_shared]") {
  const std::unique_ptr<HostBackend> backend = make_backend();
  HostBackend& gpu = *backend;
  const DevicePtr in = upload(gpu, random_floats(std::size_t{kBlocks} * 64, 5));
  const DevicePtr out = upload(gpu, std::vector<float>(std::size_t{kBlocks} * 64, 0.0F));
  CHECK_THAT(launch_rotate(gpu, in, out, 64, 0), Contains("asked for 0 bytes"));
  CHECK_THAT(launch_rotate(gpu, in, out, 64, 227 * 1024 + 1),
             Contains("232449 bytes of dynamic shared memory") && Contains("at most 232448"));
  CHECK(launch_rotate(gpu, in, out, 64, 227 * 1024).empty());
  // 64 words staged in 255 bytes: the last word lands past the buffer, which a GPU may not report.
  CHECK_THAT(launch_rotate(gpu, in, out, 64, 64 * 4 - 1),
             Contains("wrote past its dynamic shared memory") && Contains("byte 255 of a block that asked for 255"));
  CHECK(launch_rotate(gpu, in, out, 64, 64 * 4).empty());
}

TEST_CASE("the dynamic shared memory test kernel compiles with NVRTC, with no static shared memory",
          "[host][dynamic_shared][nvrtc]") {
  // What tests/gpu launches with 64 KiB: the device path of dynamic_shared_memory() (extern
  // __shared__) must compile for every arch a target ships it to.
  KernelRegistry registry(test::dynamic_shared_sources());
  const VariantId id =
      registry.declare({"dynamic_shared_rotate", test::kDynamicSharedSource, test::kDynamicSharedRotate, {}, false});
  for (const char* arch : {"sm_80", "sm_90", "sm_100"}) {
    INFO(arch);
    const std::vector<BuildRecord> records = registry.build(arch, std::span(&id, 1));
    REQUIRE(records.size() == 1);
    REQUIRE(records[0].entry != nullptr);
    INFO(records[0].entry->log);
    REQUIRE(records[0].ok());
    REQUIRE(records[0].entry->resources.has_value());
    CHECK(records[0].entry->resources->shared_bytes == 0);
  }
}
