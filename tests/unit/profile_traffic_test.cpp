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

namespace {

// The pipeline kernels (traffic_kernels.cuh's async_pipeline): 8 chunks, one 16-byte copy per
// thread per chunk, out[thread] = XOR of its chunks.
constexpr std::uint32_t kChunks = 8;
constexpr std::uint32_t kWords = 4;  // per 16-byte vector

// The XOR the kernel computes, from the input words; zero-filling threads give 0.
std::vector<std::uint32_t> xor_of_chunks(const std::vector<std::uint32_t>& in, std::uint32_t blocks,
                                         std::uint32_t threads, bool half_valid) {
  std::vector<std::uint32_t> out(std::size_t{blocks} * threads * kWords, 0);
  for (std::uint32_t b = 0; b < blocks; ++b) {
    for (std::uint32_t t = 0; t < threads; ++t) {
      if (half_valid && t >= threads / 2) {
        continue;
      }
      for (std::uint32_t c = 0; c < kChunks; ++c) {
        for (std::uint32_t w = 0; w < kWords; ++w) {
          out[(std::size_t{b} * threads + t) * kWords + w] ^=
              in[((std::size_t{b} * kChunks + c) * threads + t) * kWords + w];
        }
      }
    }
  }
  return out;
}

LaunchTraffic profile_pipeline(Fixture& f, const std::string& kernel, std::uint32_t blocks, std::uint32_t threads,
                               bool half_valid, std::uint32_t seed) {
  const auto input = random_ints<std::uint32_t>(std::size_t{blocks} * kChunks * threads * kWords, seed, 0, 0xffffffffU);
  const DevicePtr in = upload(f.gpu, input);
  const std::size_t out_words = std::size_t{blocks} * threads * kWords;
  const DevicePtr out = upload(f.gpu, std::vector<std::uint32_t>(out_words, 0xDEADBEEFU));
  const LaunchTraffic t = f.profile(kernel, blocks, threads, in, out);
  CHECK(download<std::uint32_t>(f.gpu, out, out_words) == xor_of_chunks(input, blocks, threads, half_valid));
  return t;
}

}  // namespace

TEST_CASE("profile: a 3-stage cp.async pipeline (wait<1>) keeps 2 groups in flight at each wait", "[profile]") {
  Fixture f;
  const LaunchTraffic t = profile_pipeline(f, "async_pipeline3", 3, 64, false, 18);
  CHECK(t.async_bytes == 3.0 * 64 * kChunks * 16);
  // Per thread: waits at chunks 0..6 find 2 copies of 16 bytes pending, at chunk 7 one (the next
  // group is empty); the last wait<0> finds only empty groups and is not counted: (7 x 32 + 16) / 8.
  CHECK(t.async_in_flight_bytes == 64.0 * 30);
  CHECK(t.async_bytes_per_block() == 64.0 * kChunks * 16);
}

TEST_CASE("profile: a 2-stage cp.async pipeline (wait<0>) keeps 1 group in flight", "[profile]") {
  Fixture f;
  const LaunchTraffic t = profile_pipeline(f, "async_pipeline2", 2, 96, false, 19);
  CHECK(t.async_bytes == 2.0 * 96 * kChunks * 16);
  CHECK(t.async_in_flight_bytes == 96.0 * 16);
}

TEST_CASE("profile: zero-filled asynchronous copies read nothing and count nothing", "[profile]") {
  Fixture f;
  const LaunchTraffic t = profile_pipeline(f, "async_pipeline3_half", 2, 64, true, 20);
  CHECK(t.async_bytes == 2.0 * 32 * kChunks * 16);
  CHECK(t.async_in_flight_bytes == 32.0 * 30);
  // Its global reads are only the valid copies (the lower 32 threads' sectors): 32 threads x 8
  // chunks x 16 bytes per block.
  CHECK(t.l2_read_bytes == 2.0 * 32 * kChunks * 16);
}

TEST_CASE("profile: a kernel without asynchronous copies has none in flight", "[profile]") {
  Fixture f;
  const DevicePtr in = upload(f.gpu, random_floats(512, 21));
  const DevicePtr out = upload(f.gpu, std::vector<float>(512, -7.0F));
  const LaunchTraffic t = f.profile("coalesced_copy", 4, 128, in, out);
  CHECK(t.async_bytes == 0);
  CHECK(t.async_in_flight_bytes == 0);
}

TEST_CASE("profile: a cluster's reads of its peers' shared memory are not device traffic", "[profile][cluster]") {
  Fixture f;
  const auto input = random_floats(512, 21);
  const DevicePtr in = upload(f.gpu, input);
  const DevicePtr out = upload(f.gpu, std::vector<float>(512, -7.0F));
  f.gpu.begin_profile({});
  metrale::KernelLaunch(f.gpu, load_kernel(f.gpu, "cluster_swap"))
      .grid({4, 1, 1})
      .block({128, 1, 1})
      .cluster(2)
      .dynamic_shared(128 * 4)
      .arg_ptr(in)
      .arg_ptr(out)
      .launch();
  const auto launches = f.gpu.end_profile();
  REQUIRE(launches.size() == 1);
  // coalesced_copy's counts: 16 warps, each one 128-byte load and one 128-byte store.
  check_counts(launches[0], 16, 64, 16, 64, 2048, 2048, 2048, 2048);
  const std::vector<float> got = download<float>(f.gpu, out, 512);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    wrong += got[i] == input[(i / 128 ^ 1U) * 128 + i % 128] ? 0 : 1;
  }
  CHECK(wrong == 0);
}

TEST_CASE("profile: a cluster launch is sampled in whole clusters", "[profile][cluster]") {
  Fixture f;
  constexpr std::uint32_t kBlocks = 128;
  const auto input = random_floats(std::size_t{kBlocks} * 32, 22);
  const DevicePtr in = upload(f.gpu, input);
  const DevicePtr out = upload(f.gpu, std::vector<float>(input.size(), -7.0F));
  f.gpu.begin_profile({20, 6});  // about 20 blocks in waves of 6: 3 clusters of 2 per wave
  metrale::KernelLaunch(f.gpu, load_kernel(f.gpu, "cluster_swap"))
      .grid({kBlocks, 1, 1})
      .block({32, 1, 1})
      .cluster(2)
      .dynamic_shared(32 * 4)
      .arg_ptr(in)
      .arg_ptr(out)
      .launch();
  const auto launches = f.gpu.end_profile();
  REQUIRE(launches.size() == 1);
  const LaunchTraffic& t = launches[0];
  CHECK(t.sampled());
  CHECK(t.total_blocks == kBlocks);
  CHECK(t.sampled_blocks % 2 == 0);
  CHECK(t.sampled_blocks < kBlocks);
  // Every block does one 128-byte load and store: the estimates are exact.
  CHECK(t.load_requests == Approx(kBlocks));
  CHECK(t.store_sectors == Approx(kBlocks * 4));
  CHECK(t.dram_read_bytes == Approx(kBlocks * 128));
  // Each sampled block got its partner's slice (unsampled blocks are left as they were).
  const std::vector<float> got = download<float>(f.gpu, out, input.size());
  std::size_t swapped = 0;
  std::size_t lone = 0;  // a block that ran without its cluster's other block
  for (std::size_t b = 0; b < kBlocks; ++b) {
    const bool ran = got[b * 32] != -7.0F;
    lone += ran != (got[(b ^ 1U) * 32] != -7.0F) ? 1 : 0;
    for (std::size_t i = 0; ran && i < 32; ++i) {
      swapped += got[b * 32 + i] == input[(b ^ 1U) * 32 + i] ? 1 : 0;
    }
  }
  CHECK(swapped == t.sampled_blocks * 32);
  CHECK(lone == 0);
}
