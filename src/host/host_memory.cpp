// host/host_memory.cpp: aligned host allocations and the range checks of copies.
#include "host/host_memory.hpp"

#include <fmt/format.h>

#include <cstring>
#include <new>

#include "ground/log.hpp"
#include "metrale/error.hpp"

namespace metrale::host {

HostMemory::~HostMemory() {
  if (!allocations_.empty()) {
    logger().debug("host backend: freeing {} allocations left at destruction", allocations_.size());
  }
  for (const auto& [address, bytes] : allocations_) {
    ::operator delete (reinterpret_cast<void*>(address), std::align_val_t{kAllocationAlignment});
  }
}

DevicePtr HostMemory::alloc(std::size_t bytes) {
  if (bytes == 0) {
    throw BackendError("host backend: alloc of 0 bytes (the CUDA driver refuses it too)");
  }
  void* memory = nullptr;
  try {
    memory = ::operator new (bytes, std::align_val_t{kAllocationAlignment});
  } catch (const std::bad_alloc&) {
    throw BackendError(fmt::format("host backend: out of memory allocating {} bytes", bytes));
  }
  std::memset(memory, kPoisonByte, bytes);
  const auto address = reinterpret_cast<std::uint64_t>(memory);
  const std::lock_guard lock(mutex_);
  allocations_.emplace(address, bytes);
  return DevicePtr{address};
}

void HostMemory::free(DevicePtr ptr) {
  std::unique_lock lock(mutex_);
  const auto found = allocations_.find(ptr.address);
  if (found == allocations_.end()) {
    throw BackendError(
        fmt::format("host backend: free of {:#x}, which is not the start of a live allocation", ptr.address));
  }
  allocations_.erase(found);
  lock.unlock();
  ::operator delete (reinterpret_cast<void*>(ptr.address), std::align_val_t{kAllocationAlignment});
}

void* HostMemory::host_range(DevicePtr ptr, std::size_t bytes, std::string_view operation) const {
  const std::lock_guard lock(mutex_);
  auto after = allocations_.upper_bound(ptr.address);
  if (after == allocations_.begin()) {
    throw BackendError(fmt::format("host backend {}: address {:#x} ({} bytes) is not inside any allocation", operation,
                                   ptr.address, bytes));
  }
  const auto& [start, size] = *std::prev(after);
  const std::uint64_t offset = ptr.address - start;
  if (offset >= size) {
    throw BackendError(
        fmt::format("host backend {}: address {:#x} ({} bytes) is not inside any allocation "
                    "(the nearest below, {:#x}, ends at {} bytes)",
                    operation, ptr.address, bytes, start, size));
  }
  if (bytes > size - offset) {
    throw BackendError(
        fmt::format("host backend {}: {} bytes at {:#x} run {} bytes past the end of the "
                    "{}-byte allocation at {:#x}",
                    operation, bytes, ptr.address, bytes - (size - offset), size, start));
  }
  return reinterpret_cast<void*>(ptr.address);
}

std::size_t HostMemory::live_allocations() const {
  const std::lock_guard lock(mutex_);
  return allocations_.size();
}

}  // namespace metrale::host
