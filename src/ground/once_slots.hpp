// ground/once_slots.hpp: once-per-process flags, one per outcome slot, for verdict logs (the ops'
// guards and the engines' KernelGuard).
// Invariant: claim(i) returns true exactly once per slot, whatever the threads, and takes no lock.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>

namespace metrale {

class OnceSlots {
 public:
  explicit OnceSlots(std::size_t count);

  // True the first time slot `index` is claimed; false afterwards and for an index past the end.
  bool claim(std::size_t index);
  [[nodiscard]] std::size_t size() const { return count_; }

 private:
  std::size_t count_;
  std::unique_ptr<std::atomic<bool>[]> claimed_;
};

}  // namespace metrale
