// host/block_scheduler.hpp: runs one thread block of a host kernel, its threads as cooperative
// fibers on the calling OS thread. Each fiber runs until it reaches a sync point (barrier, warp
// collective) or returns; when none can run, the scheduler completes the warp collectives and
// barriers whose participants all arrived, and when nothing completes it reports why.
// Invariants: fibers run in thread order, one at a time, so a block's result does not depend on
// timing; a sync point hands control back to the scheduler and nothing else does; after an error
// the block's remaining fibers are abandoned (their stacks are reused, never resumed).
// Clusters: each block of a cluster has its own scheduler on its own OS thread (static
// __shared__ is thread_local on the host, so it stays per block). When every thread of a block
// waits at cluster_sync() the scheduler blocks its OS thread in the cluster's rendezvous until
// the cluster's other blocks arrived or exited; every block's dynamic shared memory is prepared
// (allocated, poisoned) before any block of the cluster starts, so a peer's pointer is valid from
// the first instruction; a block whose threads all exited poisons its dynamic shared memory again
// before it counts as exited, so a peer reading it afterwards (a missing final cluster_sync)
// reads 0xCD, not the values it hoped for.
#pragma once

#include <boost/context/detail/fcontext.hpp>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cluster_rendezvous.hpp"
#include "fiber_stack_pool.hpp"
#include "metrale/gpu/launch_config.hpp"
#include "metrale/host/thread_context.hpp"
#include "sanitizer_fibers.hpp"
#include "warp_resolution.hpp"

namespace metrale::host {

// What run() returns for a block stopped because another block of its cluster failed (the
// launch reports that block's failure instead).
inline constexpr std::string_view kClusterAborted = "stopped: another block of its cluster failed";

// What a block's dynamic shared memory holds before the kernel writes it.
inline constexpr unsigned char kDynamicSharedPoison = 0xCD;
// What the bytes just past it hold: a write there is reported when the block ends (the launch
// asked for less than the kernel uses, which a GPU may not report at all).
inline constexpr unsigned char kDynamicSharedCanary = 0xA5;
inline constexpr std::uint32_t kDynamicSharedCanaryBytes = 256;

// The code every thread of the launch runs: the kernel with its arguments bound.
struct KernelBody {
  void (*run)(const void* context) = nullptr;
  const void* context = nullptr;
};

struct BlockRun {
  Dim3 grid;
  Dim3 block;
  KernelBody body;
  std::uint32_t dynamic_shared_bytes = 0;
  std::string_view kernel_name;  // for the kernel's printf lines
};

class BlockScheduler;

// The cluster a block belongs to: its rendezvous and every block's scheduler by rank. The
// default is a cluster of one (no cluster launch): cluster_sync() then only waits for the block.
struct ClusterMembership {
  ClusterRendezvous* rendezvous = nullptr;
  std::span<BlockScheduler* const> blocks;  // by rank; empty for a cluster of one
  std::uint32_t rank = 0;
};

class BlockScheduler {
 public:
  explicit BlockScheduler(std::size_t stack_bytes) : stacks_(stack_bytes) {}
  BlockScheduler(const BlockScheduler&) = delete;
  BlockScheduler& operator=(const BlockScheduler&) = delete;

  // Allocates and poisons the block's dynamic shared memory; before run(), and, in a cluster,
  // before any block of the cluster runs.
  void prepare(const BlockRun& run);
  // Runs block `block_idx` (prepared) to its end; returns what went wrong, naming the thread, or
  // nullopt. A block that finds its cluster aborted returns why (kClusterAborted).
  std::optional<std::string> run(const BlockRun& run, const Dim3& block_idx, const ClusterMembership& cluster = {});

  // The sync points, called on a fiber through thread_context.hpp. arrive_at_barrier returns
  // how many threads of the block voted (a non-zero __syncthreads_count predicate).
  static std::uint32_t arrive_at_barrier(const ::metrale::host::CallSite& site, bool vote = false);
  static std::uint64_t arrive_at_warp_sync(const WarpSyncRequest& request);
  // The running block's dynamic shared memory (dynamic_shared_memory() in thread_context.hpp);
  // the lenient form (dynamic_shared_base()) answers the guard bytes when the launch asked for none.
  static unsigned char* running_block_shared_memory();
  static unsigned char* running_block_shared_base();
  // A kernel's printf line and __trap (kernel_print and kernel_trap in thread_context.hpp).
  static void print(const char* text);
  [[noreturn]] static void trap(const char* what, const ::metrale::host::CallSite& site);
  // The cluster calls of thread_context.hpp.
  static void arrive_at_cluster_barrier(const ::metrale::host::CallSite& site);
  static unsigned char* cluster_peer_shared_memory(unsigned int rank);
  static unsigned int cluster_rank();
  static unsigned int cluster_size();

 private:
  // The running fiber waits at a barrier of kind `barrier` (`what` names it outside a launch).
  static std::uint32_t arrive_at(ThreadState barrier, const ::metrale::host::CallSite& site, const char* what,
                                 bool vote);
  struct Fiber {
    detail::FiberCoordinates coords;
    BlockScheduler* owner = nullptr;
    std::uint32_t index = 0;
    FiberStack stack;
    boost::context::detail::fcontext_t context = nullptr;
  };

  static void fiber_entry(boost::context::detail::transfer_t from) noexcept;
  void resume(Fiber& fiber);
  void yield_to_scheduler(bool for_good);
  void fail(const Fiber& fiber, std::string_view what);
  // The first byte past the dynamic shared memory the block overwrote, described; nullopt if none.
  [[nodiscard]] std::optional<std::string> dynamic_shared_overrun() const;
  // The block's dynamic shared memory; an error naming `what` when the launch asked for none.
  unsigned char* shared_memory(const char* what);
  // All threads exited: the canary check, the poison, and the exit counted by the cluster.
  std::optional<std::string> finish_block();

  // 128 bytes, so a vector of them is a 128-byte-aligned buffer (wmma tiles want 32).
  struct alignas(128) SharedChunk {
    unsigned char bytes[128];
  };

  FiberStackPool stacks_;
  std::vector<SharedChunk> dynamic_shared_;
  std::uint32_t dynamic_shared_bytes_ = 0;
  std::vector<Fiber> fibers_;
  std::vector<ThreadSync> sync_;
  KernelBody body_;
  std::string_view kernel_name_;
  ClusterMembership cluster_;
  Dim3 block_dim_;
  std::uint32_t exited_ = 0;
  std::optional<std::string> failure_;
  boost::context::detail::fcontext_t scheduler_context_ = nullptr;
  sanitizer::StackBounds scheduler_stack_;
  void* scheduler_tsan_fiber_ = nullptr;
};

}  // namespace metrale::host
