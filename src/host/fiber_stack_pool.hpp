// host/fiber_stack_pool.hpp: the stacks one worker's fibers run on, reused block after block.
// Invariants: every stack sits directly above a PROT_NONE guard page, so an overflow faults at
// once instead of corrupting a neighbour; a stack handed out is not handed out again until the
// pool is asked for the same index by the next block (one block per worker at a time); stacks are
// unmapped only when the pool dies. Under TSan each stack carries its own TSan fiber identity.
#pragma once

#include <cstddef>
#include <vector>

namespace metrale::host {

struct FiberStack {
  void* bottom = nullptr;  // lowest usable address
  std::size_t size = 0;
  void* tsan_fiber = nullptr;  // __tsan_create_fiber's handle under TSan, else null

  [[nodiscard]] void* top() const { return static_cast<char*>(bottom) + size; }
};

class FiberStackPool {
 public:
  explicit FiberStackPool(std::size_t stack_bytes);
  ~FiberStackPool();
  FiberStackPool(const FiberStackPool&) = delete;
  FiberStackPool& operator=(const FiberStackPool&) = delete;

  // The stack for thread `index` of the block about to run; maps it on first use. Throws
  // BackendError when the system refuses the memory.
  FiberStack acquire(std::size_t index);

  [[nodiscard]] std::size_t stack_bytes() const { return stack_bytes_; }

 private:
  struct Mapping {
    void* base = nullptr;  // the guard page
    std::size_t bytes = 0;
    FiberStack stack;
  };
  std::size_t stack_bytes_;
  std::size_t page_bytes_;
  std::vector<Mapping> mappings_;
};

}  // namespace metrale::host
