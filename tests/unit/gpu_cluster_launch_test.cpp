// gpu_cluster_launch_test.cpp: the cluster launch rule both backends apply (gpu/cluster_launch)
// and the CUDA backend's cuLaunchKernelEx description of a cluster launch, without a GPU (with a
// driver, jit_cuda_driver_test checks its table holds cuLaunchKernelEx).
#include <catch2/catch.hpp>
#include <cstdint>
#include <random>

#include "gpu/cluster_launch.hpp"
#include "gpu/cuda_backend.hpp"

using Catch::Matchers::Contains;
using namespace metrale;

TEST_CASE("cluster launches: each refusal is named, and a launch without a cluster is never refused",
          "[gpu][cluster]") {
  LaunchConfig config{{24, 5, 2}, {128, 1, 1}, 0, 0, 4};
  CHECK_FALSE(cluster_launch_problem(config, {9, 0}).has_value());
  CHECK_FALSE(cluster_launch_problem(config, {12, 1}).has_value());
  CHECK_THAT(cluster_launch_problem(config, {8, 9}).value_or(""),
             Contains("needs compute capability 9.0 or newer; the device is 8.9"));
  config.cluster_blocks = 0;
  CHECK_THAT(cluster_launch_problem(config, {9, 0}).value_or(""), Contains("cluster of 0 blocks"));
  config.cluster_blocks = 16;
  CHECK_THAT(cluster_launch_problem(config, {10, 0}).value_or(""),
             Contains("cluster of 16 blocks exceeds the portable cluster size of 8"));
  config.cluster_blocks = 5;
  CHECK_THAT(cluster_launch_problem(config, {9, 0}).value_or(""),
             Contains("grid.x 24 (grid (24,5,2)) is not a multiple of the cluster of 5 blocks"));
  config.cluster_blocks = 1;
  config.grid.x = 7;
  CHECK_FALSE(cluster_launch_problem(config, {7, 0}).has_value());
}

TEST_CASE("cluster launches: cuLaunchKernelEx gets the launch's shape and one cluster-dimension attribute",
          "[gpu][cluster]") {
  std::mt19937 random(77);
  std::uniform_int_distribution<std::uint32_t> dim(1, 1000);
  const std::uint32_t cluster = GENERATE(2U, 4U, 8U);
  const LaunchConfig config{{cluster * dim(random), dim(random), dim(random)},
                            {dim(random), dim(random) % 8 + 1, 1},
                            dim(random) * 64,
                            0x1234500ULL + dim(random),
                            cluster};
  CUlaunchAttribute attribute{};
  attribute.id = CU_LAUNCH_ATTRIBUTE_PRIORITY;  // overwritten
  const CUlaunchConfig launch = cluster_launch_config(config, attribute);
  CHECK(launch.gridDimX == config.grid.x);
  CHECK(launch.gridDimY == config.grid.y);
  CHECK(launch.gridDimZ == config.grid.z);
  CHECK(launch.blockDimX == config.block.x);
  CHECK(launch.blockDimY == config.block.y);
  CHECK(launch.blockDimZ == config.block.z);
  CHECK(launch.sharedMemBytes == config.dynamic_shared_bytes);
  CHECK(reinterpret_cast<std::uint64_t>(launch.hStream) == config.stream);
  REQUIRE(launch.numAttrs == 1);
  REQUIRE(launch.attrs == &attribute);
  CHECK(attribute.id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION);
  CHECK(attribute.value.clusterDim.x == cluster);
  CHECK(attribute.value.clusterDim.y == 1);
  CHECK(attribute.value.clusterDim.z == 1);
}
