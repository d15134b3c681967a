// cluster_reference.hpp: what tests/data/host/cluster.cuh's cluster_peer_sum writes, computed in
// plain C++ without a backend, and a run of it on any backend checked against that, for the host
// and the GPU tests alike.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "metrale/gpu/gpu_backend.hpp"
#include "metrale/gpu/kernel_launch.hpp"
#include "metrale/gpu/launch_config.hpp"
#include "ref/bf16.hpp"
#include "support/isolated_runtime.hpp"

namespace metrale::test {

// What cluster_peer_sum writes over the grid `grid` of blocks in clusters of `cluster`.
inline std::vector<float> peer_sum_reference(const std::vector<float>& in, Dim3 grid, std::uint32_t cluster,
                                             std::uint32_t words) {
  std::vector<float> out(in.size());
  for (std::uint32_t y = 0; y < grid.y; ++y) {
    for (std::uint32_t x = 0; x < grid.x; ++x) {
      const std::size_t row = std::size_t{y} * grid.x + x;
      const std::uint32_t first = x / cluster * cluster;
      for (std::uint32_t i = 0; i < words; ++i) {
        float sum = 0.0F;
        for (std::uint32_t k = 0; k < cluster; ++k) {
          sum += in[(std::size_t{y} * grid.x + first + k) * words + i] * static_cast<float>(k + 1);
        }
        out[row * words + i] = sum + static_cast<float>(x % cluster + 1) * 1024.0F;
      }
    }
  }
  return out;
}

// Runs cluster_peer_sum (`kernel`) on random rows over `blocks` in clusters of `cluster`, its
// output poisoned with NaN, and returns how many outputs differ from the reference.
inline std::size_t peer_sum_mismatches(GpuBackend& gpu, KernelHandle kernel, Dim3 blocks, std::uint32_t cluster,
                                       std::uint32_t seed) {
  constexpr std::uint32_t kWords = 300;  // not a multiple of the 96 threads
  const std::vector<float> input = ref::random_floats(blocks.volume() * kWords, seed, -1.0F, 1.0F);
  const DevicePtr in = upload(gpu, input);
  const DevicePtr out = upload(gpu, std::vector<float>(input.size(), std::nanf("")));
  KernelLaunch(gpu, kernel)
      .grid(blocks)
      .block({96, 1, 1})
      .cluster(cluster)
      .dynamic_shared(kWords * 4)
      .arg_ptr(in)
      .arg_ptr(out)
      .arg_u32(kWords)
      .launch();
  gpu.synchronize(0);
  std::vector<float> got(input.size());
  gpu.copy_to_host(got.data(), out, got.size() * sizeof(float));
  gpu.free(in);
  gpu.free(out);
  const std::vector<float> want = peer_sum_reference(input, blocks, cluster, kWords);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    wrong += std::fabs(got[i] - want[i]) <= 1e-5F * (1.0F + std::fabs(want[i])) ? 0 : 1;
  }
  return wrong;
}

}  // namespace metrale::test
