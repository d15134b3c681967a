// ground/once_slots.cpp: once-per-process flags.
#include "ground/once_slots.hpp"

namespace metrale {

namespace {
thread_local int quiet_depth = 0;
}  // namespace

QuietSlots::QuietSlots() { ++quiet_depth; }
QuietSlots::~QuietSlots() { --quiet_depth; }

OnceSlots::OnceSlots(std::size_t count) : count_(count), claimed_(std::make_unique<std::atomic<bool>[]>(count)) {
  for (std::size_t i = 0; i < count_; ++i) {
    claimed_[i].store(false, std::memory_order_relaxed);
  }
}

bool OnceSlots::claim(std::size_t index) {
  if (index >= count_ || quiet_depth > 0) {
    return false;
  }
  return !claimed_[index].exchange(true, std::memory_order_acq_rel);
}

}  // namespace metrale
