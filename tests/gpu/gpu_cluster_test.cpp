// gpu_cluster_test.cpp: thread-block clusters on a CUDA device, compiled by NVRTC through the
// registry from tests/data/host/cluster.cuh (the kernels the host tests run): cuLaunchKernelEx
// with a cluster dimension, %cluster_ctarank / %cluster_nctarank, barrier.cluster and mapa'd
// peer shared memory give the plain C++ reference's sums for clusters of 2, 4 and 8; below
// compute capability 9.0 the launch is refused by name before the driver is called.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "gpu/cuda_backend.hpp"
#include "metrale/error.hpp"
#include "metrale/gpu/kernel_launch.hpp"
#include "metrale/jit/kernel_registry.hpp"
#include "support/cluster_reference.hpp"
#include "support/dynamic_shared_source.hpp"

using namespace metrale;

TEST_CASE("GPU: clusters of 2, 4 and 8 sum each other's shared memory; rank is blockIdx.x % size", "[gpu][cluster]") {
  CudaBackendOpen opened = CudaBackend::open(0);
  REQUIRE(opened.backend);
  GpuBackend& gpu = *opened.backend;
  KernelRegistry registry(test::host_test_kernel_sources(test::kClusterSource));
  const VariantId sum =
      registry.declare({"cluster_peer_sum", test::kClusterSource, "metrale_test::cluster_peer_sum", {}, false});
  const VariantId ranks =
      registry.declare({"cluster_rank_count", test::kClusterSource, "metrale_test::cluster_rank_count", {}, false});
  const DeviceIndex device = registry.load(gpu);
  const KernelHandle sum_kernel = registry.handle(device, sum);
  const KernelHandle rank_kernel = registry.handle(device, ranks);
  REQUIRE(sum_kernel.present());
  REQUIRE(rank_kernel.present());
  const bool clusters = gpu.compute_capability().value_or(ComputeCapability{}) >= ComputeCapability{9, 0};
  for (const std::uint32_t cluster : {2U, 4U, 8U}) {
    INFO("cluster " << cluster);
    const Dim3 blocks{cluster * 33, 3, 1};
    if (!clusters) {
      CHECK_THROWS_WITH(test::peer_sum_mismatches(gpu, sum_kernel, blocks, cluster, 5),
                        Catch::Contains("needs compute capability 9.0 or newer"));
      continue;
    }
    CHECK(test::peer_sum_mismatches(gpu, sum_kernel, blocks, cluster, 700 + cluster) == 0);
    const std::uint32_t count = cluster * 20;
    const std::vector<std::uint32_t> poison(std::size_t{count} * 2, 0xDEADBEEFU);
    const DevicePtr out = test::upload(gpu, poison);
    KernelLaunch(gpu, rank_kernel).grid({count, 1, 1}).block({64, 1, 1}).cluster(cluster).arg_ptr(out).launch();
    gpu.synchronize(0);
    std::vector<std::uint32_t> got(poison.size());
    gpu.copy_to_host(got.data(), out, got.size() * sizeof(std::uint32_t));
    gpu.free(out);
    std::size_t wrong = 0;
    for (std::uint32_t b = 0; b < count; ++b) {
      wrong += got[2 * b] == b % cluster && got[2 * b + 1] == cluster ? 0 : 1;
    }
    CHECK(wrong == 0);
  }
}
