// metrale/gpu/kernel_handle.hpp: an opaque handle to a loaded kernel function.
// Invariant: value 0 means "absent" (not shipped, failed to compile, no device); the
// guards read presence through present() and never dereference a handle themselves.
#pragma once

#include <cstdint>

namespace metrale {

struct KernelHandle {
  // A CUfunction on the CUDA backend, an index into the host kernel table on the host
  // backend; only the backend that issued it interprets it.
  std::uint64_t value = 0;

  [[nodiscard]] constexpr bool present() const { return value != 0; }
  friend constexpr bool operator==(KernelHandle, KernelHandle) = default;
};

}  // namespace metrale
