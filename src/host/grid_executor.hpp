// host/grid_executor.hpp: runs a whole grid on a small pool of OS threads, each taking the next
// block (or cluster of blocks) and running it with its own BlockScheduler(s).
// Invariants: launches are synchronous and one at a time per executor; a block runs entirely on
// one OS thread; the first error stops the launch (blocks already running finish, no new block
// starts) and is thrown from run() as a BackendError naming the kernel and the block.
// Clusters (cluster_blocks > 1): a worker takes a whole cluster (cluster_blocks consecutive
// blocks along x), prepares every block's shared memory, runs rank 0 itself and each other rank
// on a thread of its own with a scheduler of its own, all meeting in one ClusterRendezvous, and
// joins them before taking the next; a failing block aborts the rendezvous, so its peers stop
// instead of waiting, and the launch reports that block's failure.
// A run may name the blocks to run (a profile's sample, whole clusters in rank order; clusters
// of a grid are independent) and an observer told, on the block's own OS thread, when each block
// begins and ends; its worker slot is worker * cluster_blocks + rank, below slots().
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <vector>

#include "block_scheduler.hpp"

namespace metrale::host {

// Called on the worker thread that runs the block, before its first and after its last fiber.
class BlockObserver {
 public:
  virtual ~BlockObserver() = default;
  virtual void begin_block(unsigned worker, std::uint64_t linear_block, const Dim3& block_idx) = 0;
  virtual void end_block(unsigned worker, std::uint64_t linear_block) = 0;
};

struct GridRun {
  std::string_view kernel_name;
  Dim3 grid;
  Dim3 block;
  KernelBody body;
  std::span<const std::uint64_t> blocks;  // linear block indices to run; empty: every block
  BlockObserver* observer = nullptr;
  std::uint32_t dynamic_shared_bytes = 0;
  std::uint32_t cluster_blocks = 1;  // divides grid.x, and the number of blocks named
};

class GridExecutor {
 public:
  GridExecutor(unsigned worker_threads, std::size_t fiber_stack_bytes);

  void run(const GridRun& run);

  [[nodiscard]] unsigned worker_threads() const { return worker_threads_; }
  // The observer slots a run with clusters of `cluster_blocks` uses: one per block running at once.
  [[nodiscard]] unsigned slots(std::uint32_t cluster_blocks) const { return worker_threads_ * cluster_blocks; }
  // The launch lock, held: no launch runs while it is (HostBackend::lock_for_fork).
  [[nodiscard]] std::unique_lock<std::mutex> lock_for_fork() { return std::unique_lock(launch_mutex_); }

 private:
  unsigned worker_threads_;
  std::size_t fiber_stack_bytes_;
  std::mutex launch_mutex_;
  // One per slot (worker * cluster_blocks + rank), kept for their stacks.
  std::vector<std::unique_ptr<BlockScheduler>> schedulers_;
};

}  // namespace metrale::host
