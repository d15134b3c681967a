// host/block_scheduler.cpp: the fiber switches and the per-block run loop. Fibers are made with
// Boost.Context's fcontext primitives (make_fcontext/jump_fcontext) rather than the
// boost::context::fiber wrapper: the wrapper jumps at creation and unwinds abandoned fibers with
// an exception, neither of which can be announced to the sanitizers, while here every switch is
// one annotated jump and an abandoned fiber is simply never resumed.
#include "block_scheduler.hpp"

#include <fmt/format.h>

#include <cstring>
#include <exception>

#include "ground/log.hpp"
#include "metrale/error.hpp"

namespace metrale::host {
namespace ctx = boost::context::detail;
namespace {

// The fiber running on this OS thread; the coordinates the prelude reads live beside it.
thread_local BlockScheduler* tls_scheduler = nullptr;
thread_local std::uint32_t tls_fiber_index = 0;

// What kernel_trap throws through the kernel's frames: the fiber's entry reports its text as
// the thread's failure (not as "the kernel threw").
class KernelTrap : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace

namespace detail {

void outside_kernel(const char* what) {
  throw BackendError(std::string(what) + " used outside a host kernel launch (no fiber is running)");
}

const FiberCoordinates& running_coordinates(const char* what) { return coordinates(what); }

}  // namespace detail

void sync_threads(const ::metrale::host::CallSite& site) { BlockScheduler::arrive_at_barrier(site); }

int sync_threads_count(const ::metrale::host::CallSite& site, int predicate) {
  return static_cast<int>(BlockScheduler::arrive_at_barrier(site, predicate != 0));
}

unsigned char* dynamic_shared_memory() { return BlockScheduler::running_block_shared_memory(); }

unsigned char* dynamic_shared_base() { return BlockScheduler::running_block_shared_base(); }

void kernel_print(const char* text) { BlockScheduler::print(text); }

void kernel_trap(const char* what, const ::metrale::host::CallSite& site) { BlockScheduler::trap(what, site); }

unsigned char* BlockScheduler::running_block_shared_base() {
  BlockScheduler* self = tls_scheduler;
  if (self == nullptr) {
    detail::outside_kernel("extern __shared__");
  }
  return self->dynamic_shared_.front().bytes;
}

void BlockScheduler::print(const char* text) {
  const BlockScheduler* self = tls_scheduler;
  if (self == nullptr) {
    detail::outside_kernel("printf");
  }
  std::string_view line(text != nullptr ? text : "");
  if (line.ends_with('\n')) {
    line.remove_suffix(1);
  }
  const detail::FiberCoordinates& c = self->fibers_[tls_fiber_index].coords;
  logger().info("kernel {}, block ({},{},{}), thread ({},{},{}): {}", self->kernel_name_, c.block_idx.x, c.block_idx.y,
                c.block_idx.z, c.thread_idx.x, c.thread_idx.y, c.thread_idx.z, line);
}

void BlockScheduler::trap(const char* what, const ::metrale::host::CallSite& site) {
  if (tls_scheduler == nullptr) {
    detail::outside_kernel(what);
  }
  throw KernelTrap(
      fmt::format("{} at {}; on a GPU the launch fails (an unspecified launch failure)", what, describe_site(site)));
}

unsigned char* BlockScheduler::running_block_shared_memory() {
  BlockScheduler* self = tls_scheduler;
  if (self == nullptr) {
    detail::outside_kernel("dynamic shared memory");
  }
  return self->shared_memory("dynamic shared memory (extern __shared__)");
}

unsigned char* BlockScheduler::shared_memory(const char* what) {
  if (dynamic_shared_bytes_ == 0) {
    throw BackendError(
        fmt::format("the kernel uses {} but its launch asked for 0 bytes of dynamic shared memory "
                    "(LaunchConfig::dynamic_shared_bytes)",
                    what));
  }
  return dynamic_shared_.front().bytes;
}

unsigned int cluster_cta_rank() { return BlockScheduler::cluster_rank(); }
unsigned int cluster_cta_count() { return BlockScheduler::cluster_size(); }
void cluster_sync(const ::metrale::host::CallSite& site) { BlockScheduler::arrive_at_cluster_barrier(site); }
unsigned char* cluster_peer_shared_memory(unsigned int rank) {
  return BlockScheduler::cluster_peer_shared_memory(rank);
}

unsigned int BlockScheduler::cluster_rank() {
  const BlockScheduler* self = tls_scheduler;
  if (self == nullptr) {
    detail::outside_kernel("cluster_cta_rank");
  }
  return self->cluster_.rank;
}

unsigned int BlockScheduler::cluster_size() {
  const BlockScheduler* self = tls_scheduler;
  if (self == nullptr) {
    detail::outside_kernel("cluster_cta_count");
  }
  return self->cluster_.blocks.empty() ? 1U : static_cast<unsigned int>(self->cluster_.blocks.size());
}

unsigned char* BlockScheduler::cluster_peer_shared_memory(unsigned int rank) {
  BlockScheduler* self = tls_scheduler;
  if (self == nullptr) {
    detail::outside_kernel("cluster_peer_shared_memory");
  }
  const unsigned int count = cluster_size();
  if (rank >= count) {
    throw BackendError(fmt::format("cluster_peer_shared_memory({}): the block's cluster has {} block{} (ranks 0 to {})",
                                   rank, count, count == 1 ? "" : "s", count - 1));
  }
  BlockScheduler* peer = self->cluster_.blocks.empty() ? self : self->cluster_.blocks[rank];
  return peer->shared_memory("cluster_peer_shared_memory");
}

void BlockScheduler::arrive_at_cluster_barrier(const ::metrale::host::CallSite& site) {
  arrive_at(ThreadState::kAtClusterBarrier, site, "cluster_sync", false);
}

std::uint64_t warp_sync(const WarpSyncRequest& request) { return BlockScheduler::arrive_at_warp_sync(request); }

std::uint32_t BlockScheduler::arrive_at_barrier(const ::metrale::host::CallSite& site, bool vote) {
  return arrive_at(ThreadState::kAtBarrier, site, "__syncthreads", vote);
}

std::uint32_t BlockScheduler::arrive_at(ThreadState barrier, const ::metrale::host::CallSite& site, const char* what,
                                        bool vote) {
  BlockScheduler* self = tls_scheduler;
  if (self == nullptr) {
    detail::outside_kernel(what);
  }
  const std::uint32_t index = tls_fiber_index;
  ThreadSync& sync = self->sync_[index];
  sync.state = barrier;
  sync.barrier = site;
  sync.vote = vote;
  self->yield_to_scheduler(false);
  return static_cast<std::uint32_t>(self->sync_[index].result);
}

std::uint64_t BlockScheduler::arrive_at_warp_sync(const WarpSyncRequest& request) {
  BlockScheduler* self = tls_scheduler;
  if (self == nullptr) {
    detail::outside_kernel(warp_op_name(request.op).data());
  }
  const std::uint32_t index = tls_fiber_index;
  bool refused = false;
  if (auto problem = warp_request_problem(request, index % kWarpLanes)) {
    self->fail(self->fibers_[index], *problem);
    refused = true;
  }
  // Outside the scope above: this fiber is never resumed, so nothing it owns may outlive the yield.
  if (refused) {
    self->yield_to_scheduler(true);
  }
  ThreadSync& sync = self->sync_[index];
  sync.state = ThreadState::kAtWarpSync;
  sync.warp = request;
  self->yield_to_scheduler(false);
  return self->sync_[index].result;
}

void BlockScheduler::fail(const Fiber& fiber, std::string_view what) {
  if (!failure_) {
    failure_ = describe_thread(fiber.index, block_dim_) + ": " + std::string(what);
  }
}

void BlockScheduler::fiber_entry(ctx::transfer_t from) noexcept {
  auto* fiber = static_cast<Fiber*>(from.data);
  BlockScheduler& self = *fiber->owner;
  sanitizer::finish_switch(nullptr, &self.scheduler_stack_);
  self.scheduler_context_ = from.fctx;
  try {
    self.body_.run(self.body_.context);
  } catch (const KernelTrap& trap) {
    self.fail(*fiber, trap.what());
  } catch (const std::exception& error) {
    self.fail(*fiber, std::string("the kernel threw: ") + error.what());
  } catch (...) {
    self.fail(*fiber, "the kernel threw a non-standard exception");
  }
  self.sync_[fiber->index].state = ThreadState::kExited;
  ++self.exited_;
  self.yield_to_scheduler(true);
}

METRALE_HOST_SWITCH_FRAME void BlockScheduler::resume(Fiber& fiber) {
  tls_scheduler = this;
  tls_fiber_index = fiber.index;
  detail::current_coordinates = &fiber.coords;
  sanitizer::SwitchToken token;
  sanitizer::start_switch(&token, {fiber.stack.bottom, fiber.stack.size}, fiber.stack.tsan_fiber);
  const ctx::transfer_t back = ctx::jump_fcontext(fiber.context, &fiber);
  sanitizer::finish_switch(&token, nullptr);
  fiber.context = back.fctx;
  detail::current_coordinates = nullptr;
  tls_scheduler = nullptr;
}

METRALE_HOST_SWITCH_FRAME void BlockScheduler::yield_to_scheduler(bool for_good) {
  sanitizer::SwitchToken token;
  sanitizer::start_switch(for_good ? nullptr : &token, scheduler_stack_, scheduler_tsan_fiber_);
  const ctx::transfer_t back = ctx::jump_fcontext(scheduler_context_, nullptr);
  // Only a fiber that will run on gets here: its scheduler may have moved on its own stack.
  sanitizer::finish_switch(&token, nullptr);
  scheduler_context_ = back.fctx;
}

void BlockScheduler::prepare(const BlockRun& run) {
  dynamic_shared_bytes_ = run.dynamic_shared_bytes;
  // The guard bytes exist without dynamic shared memory too: extern __shared__ points at them.
  const std::size_t with_canary = std::size_t{dynamic_shared_bytes_} + kDynamicSharedCanaryBytes;
  dynamic_shared_.resize((with_canary + sizeof(SharedChunk) - 1) / sizeof(SharedChunk));
  unsigned char* bytes = dynamic_shared_.front().bytes;
  std::memset(bytes, kDynamicSharedPoison, dynamic_shared_bytes_);
  std::memset(bytes + dynamic_shared_bytes_, kDynamicSharedCanary,
              dynamic_shared_.size() * sizeof(SharedChunk) - dynamic_shared_bytes_);
}

std::optional<std::string> BlockScheduler::finish_block() {
  if (auto overrun = dynamic_shared_overrun()) {
    return overrun;
  }
  if (dynamic_shared_bytes_ != 0) {
    std::memset(dynamic_shared_.front().bytes, kDynamicSharedPoison, dynamic_shared_bytes_);
  }
  if (cluster_.rendezvous != nullptr) {
    cluster_.rendezvous->exit_block();
  }
  return std::nullopt;
}

std::optional<std::string> BlockScheduler::run(const BlockRun& run, const Dim3& block_idx,
                                               const ClusterMembership& cluster) {
  const auto threads = static_cast<std::uint32_t>(run.block.volume());
  block_dim_ = run.block;
  body_ = run.body;
  kernel_name_ = run.kernel_name;
  cluster_ = cluster;
  exited_ = 0;
  failure_.reset();
  scheduler_tsan_fiber_ = sanitizer::current_fiber();
  fibers_.resize(threads);
  sync_.assign(threads, ThreadSync{});
  for (std::uint32_t t = 0; t < threads; ++t) {
    Fiber& fiber = fibers_[t];
    fiber.owner = this;
    fiber.index = t;
    fiber.coords.thread_idx = uint3{t % run.block.x, t / run.block.x % run.block.y, t / (run.block.x * run.block.y)};
    fiber.coords.block_idx = uint3{block_idx.x, block_idx.y, block_idx.z};
    fiber.coords.block_dim = dim3(run.block.x, run.block.y, run.block.z);
    fiber.coords.grid_dim = dim3(run.grid.x, run.grid.y, run.grid.z);
    fiber.stack = stacks_.acquire(t);
    fiber.context = ctx::make_fcontext(fiber.stack.top(), fiber.stack.size, &BlockScheduler::fiber_entry);
  }
  for (;;) {
    for (std::uint32_t t = 0; t < threads; ++t) {
      if (sync_[t].state != ThreadState::kRunnable) {
        continue;
      }
      resume(fibers_[t]);
      if (failure_) {
        return failure_;
      }
    }
    if (exited_ == threads) {
      return finish_block();
    }
    WarpResolution warps = resolve_warp_collectives(sync_, block_dim_);
    if (warps.error) {
      return warps.error;
    }
    if (warps.progress || release_barrier(sync_)) {
      continue;
    }
    if (!block_at_cluster_barrier(sync_)) {
      return diagnose_stuck_block(sync_, block_dim_);
    }
    // The OS thread waits here for the cluster's other blocks, each on its own thread.
    if (cluster_.rendezvous != nullptr && !cluster_.rendezvous->arrive()) {
      return std::string(kClusterAborted);
    }
    release_cluster_barrier(sync_);
  }
}

std::optional<std::string> BlockScheduler::dynamic_shared_overrun() const {
  const unsigned char* bytes = dynamic_shared_.front().bytes;
  const std::size_t end = dynamic_shared_.size() * sizeof(SharedChunk);
  for (std::size_t i = dynamic_shared_bytes_; i < end; ++i) {
    if (bytes[i] != kDynamicSharedCanary) {
      return fmt::format(
          "the kernel wrote past its dynamic shared memory: byte {} of a block that asked for {} "
          "(LaunchConfig::dynamic_shared_bytes is smaller than what the kernel uses)",
          i, dynamic_shared_bytes_);
    }
  }
  return std::nullopt;
}

}  // namespace metrale::host
