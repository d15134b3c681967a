// host_cluster_test.cpp: thread-block clusters on the host backend (LaunchConfig::cluster_blocks).
// The blocks of a cluster run at once, each on its own OS thread: each stages a scaled row in its
// dynamic shared memory, waits at the cluster barrier and sums every peer's row through
// cluster_peer_shared_memory, checked against a plain C++ sum; static __shared__ stays per block;
// rank and count are blockIdx.x % c and c; the refusals CUDA would give are named; a block that
// never arrives or throws ends the launch with its own error, never a hang. The same kernels
// compile with NVRTC for sm_80 (no cluster PTX), sm_90 and sm_100 (mapa, barrier.cluster), and
// through the host JIT. The [concurrency] cases are the ones CI runs under TSan (make tsan).
#include <catch2/catch.hpp>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "data/host/host_test_support.hpp"
#include "host/host_backend.hpp"
#include "host/launch_limits.hpp"
#include "jit/nvrtc_compiler.hpp"
#include "metrale/error.hpp"
#include "metrale/gpu/kernel_launch.hpp"
#include "support/cluster_reference.hpp"
#include "support/dynamic_shared_source.hpp"
#include "support/temp_dir.hpp"

// clang-format off
#include "metrale/host/cuda_host_prelude.hpp"
#include "data/host/cluster.cuh"
// clang-format on

using Catch::Matchers::Contains;
using namespace metrale;
using namespace metrale_test;

namespace {

std::unique_ptr<HostBackend> make_backend(unsigned workers = 2, ComputeCapability cc = {9, 0}) {
  HostBackendOptions options;
  options.worker_threads = workers;
  options.compute_capability = cc;
  auto gpu = std::make_unique<HostBackend>(options);
  gpu->add_kernel(make_host_kernel<&cluster_peer_sum>("cluster_peer_sum", {}));
  gpu->add_kernel(make_host_kernel<&cluster_rank_count>("cluster_rank_count", {}));
  gpu->add_kernel(make_host_kernel<&cluster_rank1_never_arrives>("cluster_rank1_never_arrives", {}));
  gpu->add_kernel(make_host_kernel<&cluster_rank1_bad_peer>("cluster_rank1_bad_peer", {}));
  gpu->add_kernel(make_host_kernel<&cluster_read_exited_peer>("cluster_read_exited_peer", {}));
  gpu->add_kernel(make_host_kernel<&cluster_split_sites>("cluster_split_sites", {}));
  return gpu;
}

// Launches `kernel` with one pointer argument; "" or the BackendError's text.
std::string launch_one(HostBackend& gpu, const char* kernel, Dim3 grid, std::uint32_t cluster, DevicePtr out,
                       std::uint32_t threads = 64) {
  try {
    KernelLaunch(gpu, load_kernel(gpu, kernel))
        .grid(grid)
        .block({threads, 1, 1})
        .cluster(cluster)
        .arg_ptr(out)
        .launch();
  } catch (const BackendError& error) {
    return error.what();
  }
  return {};
}

}  // namespace

TEST_CASE("host clusters: each block reads every peer's shared memory after the cluster barrier",
          "[host][cluster][concurrency]") {
  const std::uint32_t cluster = GENERATE(2U, 4U, 8U);
  const Dim3 grid = GENERATE(Dim3{3, 1, 1}, Dim3{2, 3, 1});  // in clusters along x
  const Dim3 blocks{grid.x * cluster, grid.y, 1};
  INFO("cluster " << cluster << " grid " << to_string(blocks));
  const std::unique_ptr<HostBackend> backend = make_backend(3);
  CHECK(test::peer_sum_mismatches(*backend, load_kernel(*backend, "cluster_peer_sum"), blocks, cluster,
                                  9000 + cluster + blocks.y) == 0);
}

TEST_CASE("host clusters: rank is blockIdx.x % cluster_blocks, count the cluster's size, none: 0 and 1",
          "[host][cluster]") {
  const std::unique_ptr<HostBackend> backend = make_backend();
  HostBackend& gpu = *backend;
  for (const std::uint32_t cluster : {1U, 2U, 4U, 8U}) {
    INFO("cluster " << cluster);
    const std::uint32_t blocks = cluster * 3;
    const DevicePtr out = upload(gpu, random_ints<std::uint32_t>(std::size_t{blocks} * 2, cluster, 100, 1000));
    REQUIRE(launch_one(gpu, "cluster_rank_count", {blocks, 1, 1}, cluster, out, 40).empty());
    const std::vector<std::uint32_t> got = download<std::uint32_t>(gpu, out, std::size_t{blocks} * 2);
    for (std::uint32_t b = 0; b < blocks; ++b) {
      CHECK(got[2 * b] == b % cluster);
      CHECK(got[2 * b + 1] == cluster);
    }
  }
}

TEST_CASE("host clusters: the launches CUDA refuses are refused, each with its reason", "[host][cluster]") {
  const std::unique_ptr<HostBackend> backend = make_backend();
  HostBackend& gpu = *backend;
  const DevicePtr out = upload(gpu, std::vector<std::uint32_t>(8 * 2 * 3 * 2, 7));
  CHECK_THAT(launch_one(gpu, "cluster_rank_count", {4, 1, 1}, 0, out), Contains("cluster of 0 blocks"));
  CHECK_THAT(launch_one(gpu, "cluster_rank_count", {9, 1, 1}, 9, out),
             Contains("cluster of 9 blocks exceeds the portable cluster size of 8"));
  CHECK_THAT(launch_one(gpu, "cluster_rank_count", {6, 1, 1}, 4, out),
             Contains("grid.x 6 (grid (6,1,1)) is not a multiple of the cluster of 4 blocks"));
  CHECK(launch_one(gpu, "cluster_rank_count", {8, 2, 3}, 4, out).empty());  // y and z are free
  const std::unique_ptr<HostBackend> ampere = make_backend(2, {8, 6});
  CHECK_THAT(launch_one(*ampere, "cluster_rank_count", {4, 1, 1}, 2, upload(*ampere, std::vector<int>(64, 7))),
             Contains("cluster_rank_count") &&
                 Contains("a cluster launch (2 blocks per cluster) needs compute capability 9.0 or newer; "
                          "the device is 8.6"));
  // The rule itself, as the CUDA backend applies it: gpu_cluster_launch_test.cpp.
}

TEST_CASE("host clusters: a block that never arrives at the cluster barrier fails the launch, no hang",
          "[host][cluster][concurrency]") {
  const std::unique_ptr<HostBackend> backend = make_backend();
  HostBackend& gpu = *backend;
  const DevicePtr out = upload(gpu, random_floats(8 * 64, 3));
  const std::string error = launch_one(gpu, "cluster_rank1_never_arrives", {8, 1, 1}, 2, out);
  INFO(error);
  CHECK_THAT(error, Contains("kernel cluster_rank1_never_arrives<default>, block (1,0,0)") ||
                        Contains("kernel cluster_rank1_never_arrives<default>, block (3,0,0)") ||
                        Contains("kernel cluster_rank1_never_arrives<default>, block (5,0,0)") ||
                        Contains("kernel cluster_rank1_never_arrives<default>, block (7,0,0)"));
  CHECK_THAT(error, Contains("thread (1,0,0) waits at __syncthreads() at cluster.cuh:") &&
                        Contains("but thread (0,0,0) waits at cluster_sync() at cluster.cuh:"));
  CHECK_THAT(error, !Contains("another block of its cluster failed"));
  // The backend is usable afterwards.
  const DevicePtr ranks = upload(gpu, std::vector<std::uint32_t>(16, 5));
  REQUIRE(launch_one(gpu, "cluster_rank_count", {8, 1, 1}, 2, ranks).empty());
  const std::vector<std::uint32_t> got = download<std::uint32_t>(gpu, ranks, 16);
  for (std::uint32_t b = 0; b < 8; ++b) {
    CHECK(got[2 * b] == b % 2);
    CHECK(got[2 * b + 1] == 2);
  }
}

TEST_CASE("host clusters: threads of one block at two different cluster barriers are named", "[host][cluster]") {
  const std::unique_ptr<HostBackend> backend = make_backend(1);
  HostBackend& gpu = *backend;
  const DevicePtr out = upload(gpu, random_floats(2 * 64, 6));
  const std::string error = launch_one(gpu, "cluster_split_sites", {2, 1, 1}, 2, out);
  INFO(error);
  CHECK_THAT(error, Contains("kernel cluster_split_sites<default>, block (") &&  // either block: both fail
                        Contains("thread (0,0,0) waits at cluster_sync() at cluster.cuh:") &&
                        Contains("but thread (1,0,0) waits at a different cluster_sync() at cluster.cuh:"));
  // Without a cluster launch the block is a cluster of one: the same mistake, the same message.
  CHECK_THAT(launch_one(gpu, "cluster_split_sites", {2, 1, 1}, 1, out),
             Contains("waits at a different cluster_sync() at cluster.cuh:"));
}

TEST_CASE("host clusters: a block that throws stops its peers waiting at the barrier, and is named",
          "[host][cluster][concurrency]") {
  const std::unique_ptr<HostBackend> backend = make_backend(1);
  HostBackend& gpu = *backend;
  const DevicePtr out = upload(gpu, random_floats(4 * 32, 4));
  const std::string error = launch_one(gpu, "cluster_rank1_bad_peer", {4, 1, 1}, 4, out, 32);
  INFO(error);
  CHECK_THAT(error, Contains("kernel cluster_rank1_bad_peer<default>, block (1,0,0): thread (0,0,0): the kernel threw: "
                             "cluster_peer_shared_memory(9): the block's cluster has 4 blocks (ranks 0 to 3)"));
}

TEST_CASE("host clusters: an exited block counts as arrived, and its shared memory is poisoned",
          "[host][cluster][concurrency]") {
  const std::unique_ptr<HostBackend> backend = make_backend();
  HostBackend& gpu = *backend;
  constexpr std::uint32_t kClusters = 3;
  constexpr std::uint32_t kWords = 200;
  const DevicePtr out = upload(gpu, random_ints<std::uint32_t>(kClusters * kWords, 12, 0, 1000));
  KernelLaunch(gpu, load_kernel(gpu, "cluster_read_exited_peer"))
      .grid({kClusters * 2, 1, 1})
      .block({64, 1, 1})
      .cluster(2)
      .dynamic_shared(kWords * 4)
      .arg_ptr(out)
      .arg_u32(kWords)
      .launch();
  std::size_t poisoned = 0;
  for (const std::uint32_t word : download<std::uint32_t>(gpu, out, kClusters * kWords)) {
    poisoned += word == 0xCDCDCDCDU ? 1 : 0;
  }
  CHECK(poisoned == kClusters * kWords);  // not rank 1's 0x11223344 + i: the kernel's race is visible
}

TEST_CASE("host clusters: a host-JIT kernel reaches the cluster calls through the prelude table",
          "[host][cluster][jit]") {
  // The library's headers and the test kernel as a host-JIT source set (the engine path).
  const SourceSet sources = test::host_test_kernel_sources(test::kClusterSource);
  metrale::test::TempDir cache("metrale-host-jit-cluster");
  HostBackendOptions options;
  options.worker_threads = 2;
  options.jit_cache_dir = cache.path();
  HostBackend gpu(options);
  const KernelHandle handle = gpu.load(LoadRequest{"cluster_peer_sum_jit",
                                                   KernelParams{},
                                                   "metrale_test::cluster_peer_sum",
                                                   {},
                                                   {},
                                                   ImageKind::kCubin,
                                                   test::kClusterSource,
                                                   &sources.sources()});
  REQUIRE(handle.present());
  CHECK(gpu.jit_stats().compiles == 1);
  CHECK(test::peer_sum_mismatches(gpu, handle, {8, 2, 1}, 4, 31) == 0);
}

TEST_CASE("the cluster test kernels compile with NVRTC: cluster PTX on sm_90 and sm_100, none on sm_80",
          "[host][cluster][nvrtc]") {
  const SourceSet sources = test::host_test_kernel_sources(test::kClusterSource);
  const std::string arch = GENERATE(as<std::string>{}, "sm_80", "sm_90", "sm_100");
  const CompileResult result =
      compile_with_nvrtc({test::kClusterSource,
                          &sources,
                          {"metrale_test::cluster_peer_sum", "metrale_test::cluster_rank_count"},
                          arch,
                          {}});
  INFO(arch << "\n" << result.log);
  REQUIRE(result.ok);
  const bool clusters = arch != "sm_80";
  CHECK((result.ptx.find("mapa.u64") != std::string::npos) == clusters);
  CHECK((result.ptx.find("barrier.cluster.arrive.release.aligned") != std::string::npos) == clusters);
  CHECK((result.ptx.find("barrier.cluster.wait.acquire.aligned") != std::string::npos) == clusters);
  CHECK((result.ptx.find("%cluster_ctarank") != std::string::npos) == clusters);
  CHECK((result.ptx.find("%cluster_nctarank") != std::string::npos) == clusters);
  REQUIRE(result.cubin.size() > 4);
}
