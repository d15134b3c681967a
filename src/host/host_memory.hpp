// host/host_memory.hpp: the host backend's "device" memory: host allocations, tracked so
// copies and frees can be checked against them.
// Invariants: every allocation is 256-byte aligned (as cuMemAlloc's) and exactly the requested
// size (so AddressSanitizer sees a kernel's out-of-bounds access), filled with a non-zero poison
// byte; a copy must lie wholly inside one live allocation; free takes only an allocation's start.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string_view>
#include <utility>
#include <vector>

#include "metrale/gpu/device_handles.hpp"

namespace metrale::host {

inline constexpr std::size_t kAllocationAlignment = 256;
inline constexpr unsigned char kPoisonByte = 0xA5;

class HostMemory {
 public:
  HostMemory() = default;
  ~HostMemory();
  HostMemory(const HostMemory&) = delete;
  HostMemory& operator=(const HostMemory&) = delete;

  DevicePtr alloc(std::size_t bytes);
  void free(DevicePtr ptr);
  // The host address of [ptr, ptr + bytes); throws BackendError naming `operation` when the
  // range is not inside one live allocation.
  void* host_range(DevicePtr ptr, std::size_t bytes, std::string_view operation) const;

  [[nodiscard]] std::size_t live_allocations() const;
  // [start, end) of every live allocation, sorted (what a profile counts as device memory).
  [[nodiscard]] std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges() const;
  // This memory's lock, held (HostBackend::lock_for_fork).
  [[nodiscard]] std::unique_lock<std::mutex> lock_for_fork() const { return std::unique_lock(mutex_); }

 private:
  mutable std::mutex mutex_;
  std::map<std::uint64_t, std::size_t> allocations_;  // start address -> bytes
};

}  // namespace metrale::host
