// host/cluster_rendezvous.hpp: the cluster barrier between the blocks of one thread-block
// cluster, each block running on its own OS thread with its own BlockScheduler. A block arrives
// when all its threads wait at cluster_sync(); it is released when every block of the cluster
// arrived or exited (CUDA's rule: an exited block counts as arrived at every later barrier).
// Invariants: std::mutex + condition_variable only (TSan sees every hand-over, so the shared
// memory a block wrote before the barrier happens-before its peers' reads after it); a
// generation count tells one barrier from the next; after abort() no arrive() blocks, so a
// failing block never leaves its peers waiting: the launch ends with the first failure.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

namespace metrale::host {

class ClusterRendezvous {
 public:
  explicit ClusterRendezvous(std::uint32_t blocks) : blocks_(blocks) {}
  ClusterRendezvous(const ClusterRendezvous&) = delete;
  ClusterRendezvous& operator=(const ClusterRendezvous&) = delete;

  // Waits until every block of the cluster arrived or exited; false when the cluster was aborted
  // (before or while waiting): the block must stop.
  [[nodiscard]] bool arrive();
  // The block's threads all exited: it counts as arrived at this and every later barrier.
  void exit_block();
  // A block failed: wakes every waiter and makes every later arrive() return false. The first
  // reason is kept.
  void abort(std::string reason);
  // The first abort's reason; nullopt if none.
  [[nodiscard]] std::optional<std::string> failure() const;

 private:
  void release_if_complete();  // with mutex_ held

  mutable std::mutex mutex_;
  std::condition_variable released_;
  std::uint32_t blocks_;
  std::uint32_t arrived_ = 0;
  std::uint32_t exited_ = 0;
  std::uint64_t generation_ = 0;
  std::optional<std::string> failure_;
};

}  // namespace metrale::host
