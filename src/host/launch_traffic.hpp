// host/launch_traffic.hpp: what one profiled host launch did to memory and how much
// arithmetic it counted, as a GPU would see it (32-byte sectors, warp-level requests).
// Invariants: every count is for the whole grid; when only a sample of the blocks ran
// (sampled_blocks < total_blocks) the counts are extrapolated from it (see grid_sample.hpp) and
// need not be integers. A full run's counts are exact.
#pragma once

#include <cstdint>
#include <string>

#include "metrale/gpu/launch_config.hpp"

namespace metrale {

inline constexpr std::uint32_t kSectorBytes = 32;

struct LaunchTraffic {
  std::string kernel;  // the host kernel's display name, "ssm_ba_gates_hopper<b256l64g8>"
  Dim3 grid;
  Dim3 block;
  std::uint64_t total_blocks = 0;
  std::uint64_t sampled_blocks = 0;
  std::uint32_t dynamic_shared_bytes = 0;  // the launch's, per block (occupancy counts it)
  std::uint32_t cluster_blocks = 1;        // the launch's blocks per cluster along x

  // Warp-level requests (lanes of one warp grouped by their access ordinal) and the distinct
  // sectors each touched, summed over requests.
  double load_requests = 0, store_requests = 0;
  double load_sectors = 0, store_sectors = 0;
  // L2 <-> SM: distinct sectors per block (reuse inside a block counts once, as if L1 caught it).
  double l2_read_bytes = 0, l2_write_bytes = 0;
  // DRAM: distinct sectors over the whole grid.
  double dram_read_bytes = 0, dram_write_bytes = 0;
  // Arithmetic counted at the prelude's intrinsics: FMAs (2 FLOPs each), other FLOPs, special
  // functions, and per-lane warp shuffles and votes; tensor-core FLOPs counted at the tile
  // collectives (2 * 16^3 per 16x16x16 MMA).
  double fma = 0, flops = 0, special_functions = 0, shuffles = 0, votes = 0, tensor_flops = 0;
  // Asynchronous copies (cp.async through metrale_arith.cuh; zero-fills read nothing and do not
  // count): their bytes over the grid, and the bytes a block keeps in flight at a wait (the sum
  // over its threads of each one's mean at its waits, averaged over the blocks run; a mean, so
  // not scaled when sampled). Both 0 for a kernel without asynchronous copies: what its plain
  // loads keep in flight is not visible to the host.
  double async_bytes = 0, async_in_flight_bytes = 0;

  [[nodiscard]] double requests() const { return load_requests + store_requests; }
  [[nodiscard]] double sectors_per_request() const {
    return requests() > 0 ? (load_sectors + store_sectors) / requests() : 0.0;
  }
  [[nodiscard]] double l2_bytes() const { return l2_read_bytes + l2_write_bytes; }
  [[nodiscard]] double dram_bytes() const { return dram_read_bytes + dram_write_bytes; }
  [[nodiscard]] bool sampled() const { return sampled_blocks < total_blocks; }
  [[nodiscard]] double async_bytes_per_block() const {
    return total_blocks > 0 ? async_bytes / static_cast<double>(total_blocks) : 0.0;
  }
};

}  // namespace metrale
