// host/grid_executor.hpp: runs a whole grid on a small pool of OS threads, each taking the next
// block and running it with its own BlockScheduler.
// Invariants: launches are synchronous and one at a time per executor; a block runs entirely on
// one OS thread; the first error stops the launch (blocks already running finish, no new block
// starts) and is thrown from run() as a BackendError naming the kernel and the block.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include "block_scheduler.hpp"

namespace metrale::host {

struct GridRun {
  std::string_view kernel_name;
  Dim3 grid;
  Dim3 block;
  KernelBody body;
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
