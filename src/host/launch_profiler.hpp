// host/launch_profiler.hpp: turns the access records of a profiled launch's blocks into its
// LaunchTraffic. As a BlockObserver it installs a trace on the worker before each block and,
// after it, folds the block's records into that worker's totals: requests and sectors per warp
// access, the block's distinct sectors (L2), and the grid-wide distinct sectors (DRAM) with the
// sample combinations each was seen in.
// Invariants: workers touch only their own slot (a cluster launch has one per block running at
// once: GridExecutor::slots, each on that block's own OS thread); finish() runs after the grid,
// on one thread. A peer's shared memory (clusters) is no device allocation, so never recorded.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "access_trace.hpp"
#include "grid_executor.hpp"
#include "grid_sample.hpp"
#include "host/launch_traffic.hpp"

namespace metrale::host {

// Requests and sectors of one block's records. Pure.
struct BlockTraffic {
  std::uint64_t load_requests = 0, store_requests = 0;
  std::uint64_t load_sectors = 0, store_sectors = 0;
  std::vector<std::uint64_t> read_sectors, written_sectors;  // distinct, sorted
};
BlockTraffic summarize_block(std::span<const AccessRecord> records);

class LaunchProfiler final : public BlockObserver {
 public:
  LaunchProfiler(const AddressRanges& device, const GridSample& sample, const Dim3& block, unsigned workers);

  void begin_block(unsigned worker, std::uint64_t linear_block, const Dim3& block_idx) override;
  void end_block(unsigned worker, std::uint64_t linear_block) override;

  [[nodiscard]] LaunchTraffic finish(std::string kernel, const Dim3& grid) const;

 private:
  struct Worker {
    BlockTrace trace;
    std::uint8_t combo = 0;
    BlockTraffic totals;  // sector lists unused here
    std::uint64_t l2_read_sectors = 0, l2_written_sectors = 0;
    std::array<std::uint64_t, profile::kOpKinds> ops{};
    std::uint64_t async_bytes = 0;
    double async_in_flight = 0;  // summed over blocks
    std::uint64_t blocks = 0;
    // sector -> combinations it was read in (low byte) and written in (high byte)
    std::unordered_map<std::uint64_t, std::uint16_t> sectors;
  };

  const AddressRanges& device_;
  const GridSample& sample_;
  Dim3 block_;
  std::vector<Worker> workers_;
};

}  // namespace metrale::host
