// kernels_ba_gates_mma_layout_test.cpp: the op's launcher sizes the tensor-core kernel's dynamic
// shared memory with ops::ba_gates_mma_shared_bytes, and the template lays its stage ring out with
// its own ba_gates_mma_shared_bytes; the two are written apart (the ops layer does not include
// kernel templates), so they are compared here over every shape a launch can have. A launcher
// that asks for less than the kernel uses is also caught on the host backend (it reports writes
// past the buffer); this catches the opposite too.
#include <catch2/catch.hpp>
#include <cstdint>

#include "ops/ssm_ba_gates_mma_layout.hpp"

// clang-format off
#include "metrale/host/cuda_host_prelude.hpp"
#include "../../templates/ssm_ba_gates_mma.cuh"
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
