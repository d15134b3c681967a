// host/grid_sample.hpp: which blocks of a large grid a profile runs, and how their traffic is
// extrapolated to the whole grid.
// A sample is a sub-grid: in each grid dimension either every coordinate, or s evenly spread
// ones (s even, >= 4), so the sample keeps whole rows of the grid's other dimensions and spans
// the grid from end to end; its size is rounded to whole waves of blocks. The first, third, ...
// coordinates of each sampled dimension form its half sample. Per-block figures (requests,
// sectors, L2 bytes, arithmetic) scale by total / sampled blocks. Distinct sectors over the
// grid (DRAM bytes) are counted for every combination of half and full samples and extrapolated
// multilinearly in the sampled coordinate counts: exact whenever the footprint is a sum of
// parts shared by all blocks, owned per coordinate of a dimension, or per block (weights,
// per-token rows, per-block tiles). Pure functions.
// Clusters: a launch with clusters of c blocks along x is sampled in whole clusters: dimension x
// of the sample counts clusters (grid.x / c of them), each sampled cluster brings all its c blocks
// (blocks() lists them in rank order, consecutively) and a block belongs to its cluster's
// combinations; block totals stay in blocks.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "metrale/gpu/launch_config.hpp"

namespace metrale::host {

struct DimSample {
  std::uint32_t extent = 1;
  std::vector<std::uint32_t> coords;  // sorted; every coordinate when not sampled
  std::vector<bool> in_half;          // per coords entry
  bool sampled = false;
};

struct GridSample {
  std::array<DimSample, 3> dims;
  std::uint64_t total_blocks = 0;
  std::uint64_t sampled_blocks = 0;
  std::uint32_t cluster_blocks = 1;  // dims[0] counts clusters of this many blocks

  // Linear indices (x fastest) of the sampled blocks, in grid order (a cluster's blocks together).
  [[nodiscard]] std::vector<std::uint64_t> blocks() const;
  // Bit c set when the block belongs to combination c (bit d of c: dimension d at its half).
  [[nodiscard]] std::uint8_t combo_mask(const Dim3& block_idx) const;
  // Whole-grid estimate from per-combination distinct counts (index = combination).
  [[nodiscard]] double extrapolate_distinct(const std::array<std::uint64_t, 8>& per_combo) const;
  [[nodiscard]] double block_scale() const {
    return sampled_blocks == 0 ? 0.0 : static_cast<double>(total_blocks) / static_cast<double>(sampled_blocks);
  }
};

// The sample for `grid` with at most about `budget_blocks` blocks (rounded up to whole
// `wave_blocks`, and to whole clusters of `cluster_blocks`, which divides grid.x); the whole grid
// when it fits.
GridSample plan_grid_sample(const Dim3& grid, std::uint64_t budget_blocks, std::uint64_t wave_blocks,
                            std::uint32_t cluster_blocks = 1);

}  // namespace metrale::host
