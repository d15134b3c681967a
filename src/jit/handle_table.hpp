// jit/handle_table.hpp: per-variant, per-device kernel handles for the launch path.
// Invariants: lookups take no lock and never block (two atomic loads); storage for a variant
// never moves once created, so a reader racing a writer sees either 0 or the handle; an id
// or device beyond the table reads as absent (0), never out of bounds.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

#include "metrale/gpu/device_handles.hpp"

namespace metrale {

class HandleTable {
 public:
  static constexpr std::size_t kMaxDevices = 16;
  static constexpr std::size_t kChunkVariants = 256;
  static constexpr std::size_t kMaxChunks = 256;  // 65536 variants
  static constexpr std::size_t kMaxVariants = kChunkVariants * kMaxChunks;

  HandleTable() = default;
  HandleTable(const HandleTable&) = delete;
  HandleTable& operator=(const HandleTable&) = delete;
  ~HandleTable();

  [[nodiscard]] KernelHandle get(std::size_t variant, std::size_t device) const noexcept {
    if (variant >= kMaxVariants || device >= kMaxDevices) {
      return {};
    }
    const Chunk* chunk = chunks_[variant / kChunkVariants].load(std::memory_order_acquire);
    if (chunk == nullptr) {
      return {};
    }
    return KernelHandle{chunk->handles[variant % kChunkVariants][device].load(std::memory_order_acquire)};
  }

  // Creates the storage for `variant` (callers check the bound first); thread-safe.
  void set(std::size_t variant, std::size_t device, KernelHandle handle);

 private:
  struct Chunk {
    std::array<std::array<std::atomic<std::uint64_t>, kMaxDevices>, kChunkVariants> handles{};
  };
  std::array<std::atomic<Chunk*>, kMaxChunks> chunks_{};
  std::mutex grow_mutex_;
};

}  // namespace metrale
