// ground/once_slots.hpp: once-per-process flags, one per outcome slot, for verdict logs (the ops'
// guards and the engines' KernelGuard).
// Invariant: claim(i) returns true exactly once per slot, whatever the threads, and takes no lock;
// on a thread inside a QuietSlots scope it returns false and consumes nothing.
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

// While one lives on a thread, every claim() on that thread answers false and leaves the slot
// free: work that is not the engine's (verification's forced runs at small shapes) must not use up
// the once-per-process lines its own calls will want. Nests.
class QuietSlots {
 public:
  QuietSlots();
  ~QuietSlots();
  QuietSlots(const QuietSlots&) = delete;
  QuietSlots& operator=(const QuietSlots&) = delete;
};

}  // namespace metrale
