// host/cluster_rendezvous.cpp: the cluster barrier's counting (see the header).
#include "cluster_rendezvous.hpp"

#include <utility>

namespace metrale::host {

void ClusterRendezvous::release_if_complete() {
  if (arrived_ > 0 && arrived_ + exited_ >= blocks_) {
    arrived_ = 0;
    ++generation_;
    released_.notify_all();
  }
}

bool ClusterRendezvous::arrive() {
  std::unique_lock lock(mutex_);
  if (failure_) {
    return false;
  }
  const std::uint64_t generation = generation_;
  ++arrived_;
  release_if_complete();
  released_.wait(lock, [&] { return generation_ != generation || failure_.has_value(); });
  return generation_ != generation;
}

void ClusterRendezvous::exit_block() {
  const std::lock_guard lock(mutex_);
  ++exited_;
  release_if_complete();
}

void ClusterRendezvous::abort(std::string reason) {
  const std::lock_guard lock(mutex_);
  if (!failure_) {
    failure_ = std::move(reason);
  }
  released_.notify_all();
}

std::optional<std::string> ClusterRendezvous::failure() const {
  const std::lock_guard lock(mutex_);
  return failure_;
}

}  // namespace metrale::host
