// Profile: the recorded traffic of small kernels equals what is counted by hand (requests,
// sectors per request, L2 bytes per block, DRAM bytes over the grid), and the arithmetic the
// prelude counts equals what the kernel does. The kernels: tests/data/profile/traffic_kernels.cuh.
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "data/host/host_test_support.hpp"
#include "data/profile/traffic_kernels.hpp"
#include "host/host_backend.hpp"
#include "metrale/gpu/kernel_launch.hpp"

using metrale::DevicePtr;
using metrale::HostBackend;
using metrale::LaunchTraffic;
using namespace metrale_test;

namespace {

struct Fixture {
  HostBackend gpu{[] {
    metrale::HostBackendOptions options;
    options.worker_threads = 2;
    return options;
  }()};
  Fixture() {
    for (auto& kernel : profiled_traffic_kernels()) {
      gpu.add_kernel(kernel);
    }
  }

  // Runs `kernel` over `blocks` x `threads` on (in, out) and returns its profile.
  LaunchTraffic profile(const std::string& kernel, std::uint32_t blocks, std::uint32_t threads, DevicePtr in,
                        DevicePtr out) {
    gpu.begin_profile({});
    metrale::KernelLaunch(gpu, load_kernel(gpu, kernel))
        .grid({blocks, 1, 1})
        .block({threads, 1, 1})
        .arg_ptr(in)
        .arg_ptr(out)
        .launch();
    auto launches = gpu.end_profile();
    REQUIRE(launches.size() == 1);
    return launches[0];
  }
};

void check_counts(const LaunchTraffic& t, double load_requests, double load_sectors, double store_requests,
                  double store_sectors, double l2_read, double l2_write, double dram_read, double dram_write) {
  CHECK(t.load_requests == load_requests);
  CHECK(t.load_sectors == load_sectors);
  CHECK(t.store_requests == store_requests);
  CHECK(t.store_sectors == store_sectors);
  CHECK(t.l2_read_bytes == l2_read);
  CHECK(t.l2_write_bytes == l2_write);
  CHECK(t.dram_read_bytes == dram_read);
  CHECK(t.dram_write_bytes == dram_write);
  CHECK_FALSE(t.sampled());
}

}  // namespace

TEST_CASE("profile: a coalesced copy moves 4 sectors per request", "[profile]") {
  Fixture f;
  const auto input = random_floats(512, 11);
  const DevicePtr in = upload(f.gpu, input);
  const DevicePtr out = upload(f.gpu, std::vector<float>(512, -7.0F));
  const LaunchTraffic t = f.profile("coalesced_copy", 4, 128, in, out);
  // 16 warps, each one 128-byte load and one 128-byte store.
  check_counts(t, 16, 64, 16, 64, 2048, 2048, 2048, 2048);
  CHECK(t.sectors_per_request() == 4.0);
  CHECK(t.total_blocks == 4);
  CHECK(download<float>(f.gpu, out, 512) == input);  // the profiled kernel still computes
}

TEST_CASE("profile: a 16-byte vector copy is one request of 16 sectors per warp", "[profile]") {
  Fixture f;
  const auto input = random_floats(256 * 4, 12);
  const DevicePtr in = upload(f.gpu, input);
  const DevicePtr out = upload(f.gpu, std::vector<float>(256 * 4, -7.0F));
  const LaunchTraffic t = f.profile("vector_copy", 2, 128, in, out);
  check_counts(t, 8, 128, 8, 128, 4096, 4096, 4096, 4096);
  CHECK(download<float>(f.gpu, out, 256 * 4) == input);
}

TEST_CASE("profile: a strided read needs 32 sectors per request", "[profile]") {
  Fixture f;
  const DevicePtr in = upload(f.gpu, random_floats(256 * 32, 13));
  const DevicePtr out = upload(f.gpu, std::vector<float>(256, -7.0F));
  const LaunchTraffic t = f.profile("strided_read", 2, 128, in, out);
  // 8 warps: loads 32 sectors each (256 sectors = 8 KiB), stores 4 each.
  check_counts(t, 8, 256, 8, 32, 8192, 1024, 8192, 1024);
  CHECK(t.load_sectors / t.load_requests == 32.0);
}

TEST_CASE("profile: a broadcast read is one sector per request and per grid", "[profile]") {
  Fixture f;
  const DevicePtr in = upload(f.gpu, random_floats(64, 14));
  const DevicePtr out = upload(f.gpu, std::vector<float>(384, -7.0F));
  const LaunchTraffic t = f.profile("broadcast_read", 3, 128, in, out);
  // 12 warps; each block moves the one sector from L2 once; DRAM reads it once.
  check_counts(t, 12, 12, 12, 48, 3 * 32, 384 * 4, 32, 384 * 4);
}

TEST_CASE("profile: a row every warp of a block reads moves from L2 once per block", "[profile]") {
  Fixture f;
  const DevicePtr in = upload(f.gpu, random_floats(64, 15));
  const DevicePtr out = upload(f.gpu, std::vector<float>(4 * 128, -7.0F));
  const LaunchTraffic t = f.profile("block_reused_row", 4, 128, in, out);
  // 16 warps, 4 sectors per request; L2: one 128-byte row per block; DRAM: rows 0 and 1.
  check_counts(t, 16, 64, 16, 64, 4 * 128, 4 * 512, 256, 4 * 512);
}

TEST_CASE("profile: the prelude counts FMAs, special functions and shuffles", "[profile]") {
  Fixture f;
  const DevicePtr in = upload(f.gpu, random_floats(256, 16));
  const DevicePtr out = upload(f.gpu, std::vector<float>(256, -7.0F));
  const LaunchTraffic t = f.profile("counted_math", 2, 128, in, out);
  CHECK(t.fma == 256 * 8);
  CHECK(t.flops == 256 * 8 * 2);
  CHECK(t.special_functions == 256);
  CHECK(t.shuffles == 256);
}

TEST_CASE("profile: a plain backend records nothing and runs the whole grid", "[profile]") {
  HostBackend gpu;
  for (auto& kernel : profiled_traffic_kernels()) {
    gpu.add_kernel(kernel);
  }
  const auto input = random_floats(512, 17);
  const DevicePtr in = upload(gpu, input);
  const DevicePtr out = upload(gpu, std::vector<float>(512, -7.0F));
  // Outside a profile the recording callbacks find no trace: the launch just computes.
  metrale::KernelLaunch(gpu, load_kernel(gpu, "coalesced_copy"))
      .grid({4, 1, 1})
      .block({128, 1, 1})
      .arg_ptr(in)
      .arg_ptr(out)
      .launch();
  CHECK(download<float>(gpu, out, 512) == input);
  CHECK(gpu.end_profile().empty());
}
