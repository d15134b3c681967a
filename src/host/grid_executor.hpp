// host/grid_executor.hpp: runs a whole grid on a small pool of OS threads, each taking the next
// block and running it with its own BlockScheduler.
// Invariants: launches are synchronous and one at a time per executor; a block runs entirely on
// one OS thread; the first error stops the launch (blocks already running finish, no new block
// starts) and is thrown from run() as a BackendError naming the kernel and the block.
// A run may name the blocks to run (a profile's sample; blocks of a grid are independent) and
// an observer told, on the worker's own OS thread, when each block begins and ends.
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
};

class GridExecutor {
 public:
  GridExecutor(unsigned worker_threads, std::size_t fiber_stack_bytes);

  void run(const GridRun& run);

  [[nodiscard]] unsigned worker_threads() const { return worker_threads_; }

 private:
  unsigned worker_threads_;
  std::size_t fiber_stack_bytes_;
  std::mutex launch_mutex_;
  std::vector<std::unique_ptr<BlockScheduler>> schedulers_;  // one per worker, kept for their stacks
};

}  // namespace metrale::host
