// metrale/gpu/device_handles.hpp: the two opaque values a backend hands out: an address in its
// memory (DevicePtr: a CUdeviceptr on CUDA, a host address on the host backend) and a loaded
// kernel function (KernelHandle).
// Invariants: address 0 is the null pointer that ops refuse; handle value 0 means "absent" (not
// shipped, failed to compile, no device), and the guards read presence through present() and
// never dereference a handle themselves.
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

struct KernelHandle {
  // A CUfunction on the CUDA backend, an index into the host kernel table on the host
  // backend; only the backend that issued it interprets it.
  std::uint64_t value = 0;

  [[nodiscard]] constexpr bool present() const { return value != 0; }
  friend constexpr bool operator==(KernelHandle, KernelHandle) = default;
};

}  // namespace metrale
