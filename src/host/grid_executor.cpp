// host/grid_executor.cpp: hands blocks to worker threads; the calling thread is worker 0.
#include "grid_executor.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <optional>
#include <string>
#include <thread>

#include "metrale/error.hpp"

namespace metrale::host {
namespace {

Dim3 block_coordinates(std::uint64_t linear, const Dim3& grid) {
  return Dim3{static_cast<std::uint32_t>(linear % grid.x), static_cast<std::uint32_t>(linear / grid.x % grid.y),
              static_cast<std::uint32_t>(linear / (static_cast<std::uint64_t>(grid.x) * grid.y))};
}

}  // namespace

GridExecutor::GridExecutor(unsigned worker_threads, std::size_t fiber_stack_bytes)
    : worker_threads_(std::max(1U, worker_threads)), fiber_stack_bytes_(fiber_stack_bytes) {}

void GridExecutor::run(const GridRun& run) {
  const std::lock_guard lock(launch_mutex_);
  const std::uint64_t blocks = run.blocks.empty() ? run.grid.volume() : run.blocks.size();
  const auto workers = static_cast<unsigned>(std::min<std::uint64_t>(worker_threads_, blocks));
  while (schedulers_.size() < workers) {
    schedulers_.push_back(std::make_unique<BlockScheduler>(fiber_stack_bytes_));
  }
  std::atomic<std::uint64_t> next_block{0};
  std::atomic<bool> stop{false};
  std::mutex error_mutex;
  std::optional<std::string> first_error;
  const BlockRun block_run{run.grid, run.block, run.body, run.dynamic_shared_bytes};

  auto work = [&](unsigned worker) {
    BlockScheduler& scheduler = *schedulers_[worker];
    while (!stop.load(std::memory_order_relaxed)) {
      const std::uint64_t next = next_block.fetch_add(1, std::memory_order_relaxed);
      if (next >= blocks) {
        return;
      }
      const std::uint64_t linear = run.blocks.empty() ? next : run.blocks[next];
      const Dim3 block_idx = block_coordinates(linear, run.grid);
      std::optional<std::string> error;
      bool observed = false;
      try {
        if (run.observer != nullptr) {
          run.observer->begin_block(worker, linear, block_idx);
          observed = true;
        }
        error = scheduler.run(block_run, block_idx);
      } catch (const std::exception& failure) {
        error = failure.what();
      }
      if (observed) {
        try {
          run.observer->end_block(worker, linear);
        } catch (const std::exception& failure) {
          error = error.value_or(failure.what());
        }
      }
      if (error) {
        const std::lock_guard error_lock(error_mutex);
        if (!first_error) {
          first_error = fmt::format("kernel {}, block {}: {}", run.kernel_name, to_string(block_idx), *error);
        }
        stop.store(true);
        return;
      }
    }
  };

  {
    std::vector<std::jthread> helpers;
    helpers.reserve(workers - 1);
    for (unsigned worker = 1; worker < workers; ++worker) {
      helpers.emplace_back(work, worker);
    }
    work(0);
  }
  if (first_error) {
    throw BackendError(*first_error);
  }
}

}  // namespace metrale::host
