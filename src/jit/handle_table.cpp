// handle_table.cpp: chunk creation (rare, under a mutex) and release.
#include "jit/handle_table.hpp"

#include "metrale/error.hpp"

namespace metrale {

HandleTable::~HandleTable() {
  for (std::atomic<Chunk*>& chunk : chunks_) {
    delete chunk.load(std::memory_order_relaxed);
  }
}

void HandleTable::set(std::size_t variant, std::size_t device, KernelHandle handle) {
  if (variant >= kMaxVariants || device >= kMaxDevices) {
    throw ArgumentError("handle slot (variant " + std::to_string(variant) + ", device " + std::to_string(device) +
                        ") is beyond the table (" + std::to_string(kMaxVariants) + " variants, " +
                        std::to_string(kMaxDevices) + " devices)");
  }
  std::atomic<Chunk*>& slot = chunks_[variant / kChunkVariants];
  Chunk* chunk = slot.load(std::memory_order_acquire);
  if (chunk == nullptr) {
    std::lock_guard lock(grow_mutex_);
    chunk = slot.load(std::memory_order_acquire);
    if (chunk == nullptr) {
      chunk = new Chunk();
      slot.store(chunk, std::memory_order_release);
    }
  }
  chunk->handles[variant % kChunkVariants][device].store(handle.value, std::memory_order_release);
}

}  // namespace metrale
