// host/fiber_stack_pool.cpp: guard-paged stacks from mmap, kept for reuse.
#include "fiber_stack_pool.hpp"

#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "metrale/error.hpp"
#include "sanitizer_fibers.hpp"

namespace metrale::host {

FiberStackPool::FiberStackPool(std::size_t stack_bytes) : page_bytes_(static_cast<std::size_t>(sysconf(_SC_PAGESIZE))) {
  stack_bytes_ = (stack_bytes + page_bytes_ - 1) / page_bytes_ * page_bytes_;
}

FiberStackPool::~FiberStackPool() {
  for (Mapping& mapping : mappings_) {
    sanitizer::destroy_fiber(mapping.stack.tsan_fiber);
    // ASan's shadow outlives the mapping: stale redzones of abandoned frames would poison
    // whatever is mapped here next (an uninstrumented library's buffer, a false report).
    sanitizer::unpoison(mapping.stack.bottom, mapping.stack.size);
    munmap(mapping.base, mapping.bytes);
  }
}

FiberStack FiberStackPool::acquire(std::size_t index) {
  while (mappings_.size() <= index) {
    Mapping mapping;
    mapping.bytes = page_bytes_ + stack_bytes_;
    void* base =
        mmap(nullptr, mapping.bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) {
      throw BackendError(
          fmt::format("host backend: cannot map a {}-byte fiber stack: {}", stack_bytes_, std::strerror(errno)));
    }
    if (mprotect(base, page_bytes_, PROT_NONE) != 0) {
      const int error = errno;
      munmap(base, mapping.bytes);
      throw BackendError(
          fmt::format("host backend: cannot protect a fiber stack's guard page: {}", std::strerror(error)));
    }
    mapping.base = base;
    mapping.stack = FiberStack{static_cast<char*>(base) + page_bytes_, stack_bytes_, sanitizer::create_fiber()};
    mappings_.push_back(mapping);
  }
  FiberStack stack = mappings_[index].stack;
  // A fiber abandoned after an error leaves its frames' redzones poisoned; the next one must not
  // trip over them.
  sanitizer::unpoison(stack.bottom, stack.size);
  return stack;
}

}  // namespace metrale::host
