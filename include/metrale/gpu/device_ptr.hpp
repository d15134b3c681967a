// metrale/gpu/device_ptr.hpp: an address in a backend's memory (CUdeviceptr on CUDA,
// a host address on the host backend). 0 is the null pointer that ops refuse.
#pragma once

#include <cstddef>
#include <cstdint>

namespace metrale {

struct DevicePtr {
  std::uint64_t address = 0;

  [[nodiscard]] constexpr bool is_null() const { return address == 0; }
  [[nodiscard]] constexpr DevicePtr offset(std::size_t bytes) const { return DevicePtr{address + bytes}; }
  friend constexpr bool operator==(DevicePtr, DevicePtr) = default;
};

}  // namespace metrale
