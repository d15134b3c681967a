// host/grid_executor.cpp: hands blocks (or clusters) to worker threads; the calling thread is
// worker 0, and a cluster's rank 0 runs on its worker's thread.
#include "grid_executor.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <optional>
#include <string>
#include <system_error>
#include <thread>

#include "cluster_rendezvous.hpp"
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
  const std::uint32_t cluster = std::max(1U, run.cluster_blocks);
  const std::uint64_t blocks = run.blocks.empty() ? run.grid.volume() : run.blocks.size();
  if (blocks % cluster != 0 || run.grid.x % cluster != 0) {
    throw BackendError(fmt::format("kernel {}: {} blocks of grid {} are not whole clusters of {} (internal error)",
                                   run.kernel_name, blocks, to_string(run.grid), cluster));
  }
  const std::uint64_t clusters = blocks / cluster;
  const auto workers = static_cast<unsigned>(std::min<std::uint64_t>(worker_threads_, clusters));
  while (schedulers_.size() < std::size_t{workers} * cluster) {
    schedulers_.push_back(std::make_unique<BlockScheduler>(fiber_stack_bytes_));
  }
  std::atomic<std::uint64_t> next_cluster{0};
  std::atomic<bool> stop{false};
  std::mutex error_mutex;
  std::optional<std::string> first_error;
  const BlockRun block_run{run.grid, run.block, run.body, run.dynamic_shared_bytes, run.kernel_name};

  // One block on the calling OS thread; what went wrong, naming the kernel and the block.
  auto run_block = [&](unsigned slot, std::uint64_t linear,
                       const ClusterMembership& membership) -> std::optional<std::string> {
    const Dim3 block_idx = block_coordinates(linear, run.grid);
    std::optional<std::string> error;
    bool observed = false;
    try {
      if (run.observer != nullptr) {
        run.observer->begin_block(slot, linear, block_idx);
        observed = true;
      }
      error = schedulers_[slot]->run(block_run, block_idx, membership);
    } catch (const std::exception& failure) {
      error = failure.what();
    }
    if (observed) {
      try {
        run.observer->end_block(slot, linear);
      } catch (const std::exception& failure) {
        error = error.value_or(failure.what());
      }
    }
    if (!error) {
      return std::nullopt;
    }
    return fmt::format("kernel {}, block {}: {}", run.kernel_name, to_string(block_idx), *error);
  };

  // A whole cluster, rank 0 on the calling thread and the others on threads of their own.
  auto run_cluster = [&](unsigned worker, std::uint64_t first) -> std::optional<std::string> {
    auto linear = [&](std::uint32_t rank) { return run.blocks.empty() ? first + rank : run.blocks[first + rank]; };
    const std::size_t base = std::size_t{worker} * cluster;
    for (std::uint32_t rank = 0; rank < cluster; ++rank) {
      schedulers_[base + rank]->prepare(block_run);
    }
    if (cluster == 1) {
      return run_block(worker, linear(0), {});
    }
    std::vector<BlockScheduler*> members(cluster);
    for (std::uint32_t rank = 0; rank < cluster; ++rank) {
      members[rank] = schedulers_[base + rank].get();
    }
    ClusterRendezvous rendezvous(cluster);
    auto rank_work = [&](std::uint32_t rank) {
      const ClusterMembership membership{&rendezvous, members, rank};
      if (auto error = run_block(static_cast<unsigned>(base + rank), linear(rank), membership)) {
        rendezvous.abort(std::move(*error));  // the first abort is the block that failed first
      }
    };
    {
      std::vector<std::jthread> ranks;
      ranks.reserve(cluster - 1);
      for (std::uint32_t rank = 1; rank < cluster; ++rank) {
        try {
          ranks.emplace_back(rank_work, rank);
        } catch (const std::system_error& failure) {
          // The ranks already started would wait for this one: abort wakes them.
          rendezvous.abort(fmt::format("kernel {}, block {}: no thread for cluster rank {}: {}", run.kernel_name,
                                       to_string(block_coordinates(linear(rank), run.grid)), rank, failure.what()));
          break;
        }
      }
      rank_work(0);
    }
    return rendezvous.failure();
  };

  auto work = [&](unsigned worker) {
    while (!stop.load(std::memory_order_relaxed)) {
      const std::uint64_t next = next_cluster.fetch_add(1, std::memory_order_relaxed);
      if (next >= clusters) {
        return;
      }
      std::optional<std::string> error;
      try {
        error = run_cluster(worker, next * cluster);
      } catch (const std::exception& failure) {  // a scheduler that could not be prepared
        error = fmt::format("kernel {}: {}", run.kernel_name, failure.what());
      }
      if (error) {
        const std::lock_guard error_lock(error_mutex);
        if (!first_error) {
          first_error = std::move(error);
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
