// metrale/gpu/kernel_launch.hpp: a builder for one launch, in the shape of the seeds'
// launchers: KernelLaunch(gpu, kernel).grid(..).block(..).arg_ptr(..).arg_u32(..).launch(stream).
// Invariants: arguments keep their order and exact sizes (the host backend checks them
// against the kernel's signature); launching an absent handle is a BackendError, never a
// driver call with a null function; the builder holds its arguments in place (at most
// kMaxKernelArgs, an ArgumentError past that), so a launch allocates nothing.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "metrale/gpu/gpu_backend.hpp"

namespace metrale {

class KernelLaunch {
 public:
  KernelLaunch(GpuBackend& gpu, KernelHandle kernel) : gpu_(gpu), kernel_(kernel) {}

  KernelLaunch& grid(Dim3 dims) {
    config_.grid = dims;
    return *this;
  }
  KernelLaunch& block(Dim3 dims) {
    config_.block = dims;
    return *this;
  }
  KernelLaunch& dynamic_shared(std::uint32_t bytes) {
    config_.dynamic_shared_bytes = bytes;
    return *this;
  }
  // Launches 1-D clusters of `blocks` thread blocks along grid.x (LaunchConfig::cluster_blocks).
  KernelLaunch& cluster(std::uint32_t blocks) {
    config_.cluster_blocks = blocks;
    return *this;
  }
  KernelLaunch& arg_ptr(DevicePtr ptr) { return arg(ptr.address); }
  KernelLaunch& arg_u32(std::uint32_t value) { return arg(value); }
  KernelLaunch& arg_i32(std::int32_t value) { return arg(value); }
  KernelLaunch& arg_f32(float value) { return arg(value); }

  // Any trivially copyable value, passed by its bytes.
  template <typename T>
  KernelLaunch& arg(const T& value) {
    static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= kSlotBytes);
    Slot& slot = next_slot();
    std::memcpy(slot.bytes.data(), &value, sizeof(T));
    slot.size = sizeof(T);
    return *this;
  }

  // An argument given by address and size (1 to 16 bytes), as a C caller holds it; an
  // ArgumentError names the argument's position otherwise.
  KernelLaunch& arg_bytes(const void* value, std::size_t size);

  // Throws BackendError for an absent handle or a backend failure.
  void launch(std::uint64_t stream = 0);

  [[nodiscard]] const LaunchConfig& config() const { return config_; }
  [[nodiscard]] std::size_t arg_count() const { return count_; }

 private:
  static constexpr std::size_t kSlotBytes = 16;
  struct Slot {
    alignas(16) std::array<unsigned char, kSlotBytes> bytes;
    std::size_t size;
  };

  // The next free slot; ArgumentError when all kMaxKernelArgs are taken.
  Slot& next_slot();

  GpuBackend& gpu_;
  KernelHandle kernel_;
  LaunchConfig config_;
  std::array<Slot, kMaxKernelArgs> slots_{};
  std::size_t count_ = 0;
};

}  // namespace metrale
