// host/grid_sample.cpp: the sub-grid a profile runs and the extrapolation of its counts.
#include "grid_sample.hpp"

#include <algorithm>
#include <numeric>

namespace metrale::host {
namespace {

constexpr std::uint32_t kMinSampledCoords = 4;

std::uint32_t extent_of(const Dim3& grid, std::size_t d) { return d == 0 ? grid.x : d == 1 ? grid.y : grid.z; }
std::uint32_t coord_of(const Dim3& idx, std::size_t d) { return d == 0 ? idx.x : d == 1 ? idx.y : idx.z; }

DimSample whole(std::uint32_t extent) {
  DimSample dim;
  dim.extent = extent;
  dim.coords.resize(extent);
  std::iota(dim.coords.begin(), dim.coords.end(), 0U);
  dim.in_half.assign(extent, true);
  return dim;
}

// s coordinates spread evenly over [0, extent): the middle of each of s equal strata.
DimSample spread(std::uint32_t extent, std::uint32_t count) {
  DimSample dim;
  dim.extent = extent;
  dim.sampled = true;
  for (std::uint32_t i = 0; i < count; ++i) {
    dim.coords.push_back(static_cast<std::uint32_t>((2ULL * i + 1) * extent / (2ULL * count)));
    dim.in_half.push_back(i % 2 == 0);
  }
  return dim;
}

std::uint64_t product(const std::array<std::uint32_t, 3>& counts) {
  return static_cast<std::uint64_t>(counts[0]) * counts[1] * counts[2];
}

}  // namespace

GridSample plan_grid_sample(const Dim3& blocks_grid, std::uint64_t budget_blocks, std::uint64_t wave_blocks,
                            std::uint32_t cluster_blocks) {
  // Planned over the grid of clusters, in clusters; the block totals are restored at the end.
  const std::uint32_t cluster = std::max(1U, cluster_blocks);
  const Dim3 grid{blocks_grid.x / cluster, blocks_grid.y, blocks_grid.z};
  GridSample sample;
  sample.cluster_blocks = cluster;
  sample.total_blocks = blocks_grid.volume();
  const std::uint64_t wave = std::max<std::uint64_t>(1, (wave_blocks + cluster - 1) / cluster);
  const std::uint64_t budget_clusters = (budget_blocks + cluster - 1) / cluster;
  const std::uint64_t budget = std::max<std::uint64_t>(1, (budget_clusters + wave - 1) / wave) * wave;
  std::array<std::uint32_t, 3> counts{grid.x, grid.y, grid.z};
  std::array<std::size_t, 3> order{0, 1, 2};
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return extent_of(grid, a) > extent_of(grid, b); });
  std::array<bool, 3> sampled{};
  for (std::size_t d : order) {
    if (product(counts) <= budget) {
      break;
    }
    const std::uint64_t others = product(counts) / counts[d];
    std::uint64_t want = std::max<std::uint64_t>(kMinSampledCoords, (budget + others - 1) / others);
    want += want % 2;
    if (want * 2 <= counts[d]) {  // sampling a dimension only pays when it at least halves it
      counts[d] = static_cast<std::uint32_t>(want);
      sampled[d] = true;
    }
  }
  for (std::size_t d = 0; d < 3; ++d) {
    sample.dims[d] = sampled[d] ? spread(extent_of(grid, d), counts[d]) : whole(extent_of(grid, d));
  }
  sample.sampled_blocks = product(counts) * cluster;
  return sample;
}

std::vector<std::uint64_t> GridSample::blocks() const {
  std::vector<std::uint64_t> out;
  out.reserve(sampled_blocks);
  const std::uint64_t gx = std::uint64_t{dims[0].extent} * cluster_blocks;
  const std::uint64_t gy = dims[1].extent;
  for (std::uint32_t z : dims[2].coords) {
    for (std::uint32_t y : dims[1].coords) {
      for (std::uint32_t x : dims[0].coords) {
        for (std::uint32_t rank = 0; rank < cluster_blocks; ++rank) {
          out.push_back(std::uint64_t{x} * cluster_blocks + rank + gx * (y + gy * z));
        }
      }
    }
  }
  return out;
}

std::uint8_t GridSample::combo_mask(const Dim3& block) const {
  const Dim3 block_idx{block.x / std::max(1U, cluster_blocks), block.y, block.z};  // its cluster
  std::uint8_t mask = 0;
  for (unsigned combo = 0; combo < 8; ++combo) {
    bool member = true;
    for (std::size_t d = 0; d < 3 && member; ++d) {
      if ((combo >> d & 1U) == 0) {
        continue;
      }
      if (!dims[d].sampled) {
        member = false;  // only sampled dimensions have a half level
        break;
      }
      const auto& coords = dims[d].coords;
      const auto found = std::lower_bound(coords.begin(), coords.end(), coord_of(block_idx, d));
      member = found != coords.end() && *found == coord_of(block_idx, d) &&
               dims[d].in_half[static_cast<std::size_t>(found - coords.begin())];
    }
    if (member) {
      mask = static_cast<std::uint8_t>(mask | (1U << combo));
    }
  }
  return mask;
}

double GridSample::extrapolate_distinct(const std::array<std::uint64_t, 8>& per_combo) const {
  double estimate = 0.0;
  for (unsigned combo = 0; combo < 8; ++combo) {
    double weight = 1.0;
    for (std::size_t d = 0; d < 3; ++d) {
      const bool half = (combo >> d & 1U) != 0;
      if (!dims[d].sampled) {
        weight = half ? 0.0 : weight;
        continue;
      }
      const auto s = static_cast<double>(dims[d].coords.size());
      const auto h = static_cast<double>((dims[d].coords.size() + 1) / 2);
      const auto e = static_cast<double>(dims[d].extent);
      weight *= half ? (s - e) / (s - h) : (e - h) / (s - h);
    }
    estimate += weight * static_cast<double>(per_combo[combo]);
  }
  // Never below what the sample itself touched.
  return std::max(estimate, static_cast<double>(per_combo[0]));
}

}  // namespace metrale::host
