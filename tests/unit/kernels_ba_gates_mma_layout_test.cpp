// kernels_ba_gates_mma_layout_test.cpp: the op's launcher sizes the tensor-core kernel's dynamic
// shared memory with ops::ba_gates_mma_shared_bytes, and the template lays its stage ring out with
// its own ba_gates_mma_shared_bytes; the two are written apart (the ops layer does not include
// kernel templates), so they are compared here over every shape a launch can have. A launcher
// that asks for less than the kernel uses is also caught on the host backend (it reports writes
// past the buffer); this catches the opposite too.
#include <catch2/catch.hpp>
#include <cstdint>

#include "ops/ssm_ba_gates/ssm_ba_gates.hpp"

// clang-format off
#include "metrale/host/cuda_host_prelude.hpp"
#include "ops/ssm_ba_gates/ssm_ba_gates_mma.cuh"
// clang-format on

TEST_CASE("the tensor-core kernel's shared memory: the op's size is the template's", "[kernels][ba_gates_mma]") {
  std::uint64_t compared = 0;
  for (std::uint32_t tokens = 16; tokens <= 128; tokens += 16) {
    for (std::uint32_t n = 1; n <= metrale::kernels::kMmaMaxN; ++n) {
      for (std::uint32_t stages = 2; stages <= metrale::kernels::kMmaMaxStages; ++stages) {
        INFO("tokens " << tokens << " N " << n << " stages " << stages);
        REQUIRE(metrale::ops::ba_gates_mma_shared_bytes(tokens, n, stages) ==
                metrale::kernels::ba_gates_mma_shared_bytes(tokens, n, stages));
        ++compared;
      }
    }
  }
  CHECK(compared == 8 * 128 * 15);
}

TEST_CASE("the tensor-core kernel's K split: one wave of clusters up to 8, never more CTAs than chunks",
          "[kernels][ba_gates_mma]") {
  using metrale::ComputeCapability;
  using metrale::ops::ba_gates_mma_cluster_blocks;
  const ComputeCapability hopper{9, 0};
  // M 8192: 64 tiles of 128 -> 2 x 64 = 128 CTAs <= 132; 4 x 64 would not fit.
  CHECK(ba_gates_mma_cluster_blocks(8192, 128, 5120, 132, hopper) == 2);
  // 128 tiles of 64 already fill the SMs: no cluster.
  CHECK(ba_gates_mma_cluster_blocks(8192, 64, 5120, 132, hopper) == 1);
  CHECK(ba_gates_mma_cluster_blocks(1024, 128, 5120, 132, hopper) == 8);  // 8 tiles x 8 = 64 CTAs
  CHECK(ba_gates_mma_cluster_blocks(2176, 128, 5120, 132, hopper) == 4);  // 17 tiles x 4 = 68; x 8 = 136
  CHECK(ba_gates_mma_cluster_blocks(1, 128, 5120, 132, hopper) == 8);
  CHECK(ba_gates_mma_cluster_blocks(1, 128, 5120, 4, hopper) == 4);  // the SMs bound it
  CHECK(ba_gates_mma_cluster_blocks(1, 128, 5120, 0, hopper) == 1);
  // K bounds it: 3 chunks of 64 split at most 2 ways (a power of two), 1 chunk not at all.
  CHECK(ba_gates_mma_cluster_blocks(1, 128, 192, 132, hopper) == 2);
  CHECK(ba_gates_mma_cluster_blocks(1, 128, 64, 132, hopper) == 1);
  CHECK(ba_gates_mma_cluster_blocks(1, 128, 65, 132, hopper) == 2);
  // Clusters need sm_90; sm_121 (gb10) and sm_100 have them.
  CHECK(ba_gates_mma_cluster_blocks(1024, 128, 5120, 132, ComputeCapability{8, 9}) == 1);
  CHECK(ba_gates_mma_cluster_blocks(1024, 128, 5120, 132, std::nullopt) == 1);
  CHECK(ba_gates_mma_cluster_blocks(1024, 64, 5120, 48, ComputeCapability{12, 1}) == 2);  // 16 tiles x 2 = 32
  CHECK(ba_gates_mma_cluster_blocks(1024, 128, 5120, 148, ComputeCapability{10, 0}) == 8);
  CHECK(ba_gates_mma_cluster_blocks(1024, 0, 5120, 132, hopper) == 1);
  // Saturating arithmetic at the extremes.
  CHECK(ba_gates_mma_cluster_blocks(0xffffffffu, 16, 0xfffffff8u, 132, hopper) == 1);
  CHECK(ba_gates_mma_cluster_blocks(1, 16, 0xfffffff8u, 0xffffffffu, hopper) == 8);
}
