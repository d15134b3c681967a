// log_once.cpp: once-flags for the ops' verdict logs.
#include "ops/log_once.hpp"

namespace metrale::ops {

OnceSlots::OnceSlots(std::size_t count) : count_(count), claimed_(std::make_unique<std::atomic<bool>[]>(count)) {
  for (std::size_t i = 0; i < count_; ++i) {
    claimed_[i].store(false, std::memory_order_relaxed);
  }
}

bool OnceSlots::claim(std::size_t index) {
  if (index >= count_) {
    return false;
  }
  return !claimed_[index].exchange(true, std::memory_order_acq_rel);
}

}  // namespace metrale::ops
