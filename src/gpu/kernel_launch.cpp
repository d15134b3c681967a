// kernel_launch.cpp: turns the builder's slots into the backend's argument list.
#include "metrale/gpu/kernel_launch.hpp"

#include <string>

#include "metrale/error.hpp"

namespace metrale {

KernelLaunch& KernelLaunch::arg_bytes(const void* value, std::size_t size) {
  if (value == nullptr || size == 0 || size > kSlotBytes) {
    throw ArgumentError("kernel argument " + std::to_string(slots_.size()) + ": " +
                        (value == nullptr ? std::string("its address is null")
                                          : "size " + std::to_string(size) + " is not in [1, 16] bytes"));
  }
  Slot slot{};
  std::memcpy(slot.bytes.data(), value, size);
  slot.size = size;
  slots_.push_back(slot);
  return *this;
}

void KernelLaunch::launch(std::uint64_t stream) {
  if (!kernel_.present()) {
    throw BackendError("launch of an absent kernel (handle 0): the kernel was not built for this target");
  }
  if (config_.grid.volume() == 0 || config_.block.volume() == 0) {
    throw BackendError("launch with an empty grid " + to_string(config_.grid) + " or block " +
                       to_string(config_.block));
  }
  std::vector<KernelArg> args;
  args.reserve(slots_.size());
  for (const Slot& slot : slots_) {
    args.push_back(KernelArg{slot.bytes.data(), slot.size});
  }
  config_.stream = stream;
  gpu_.launch(kernel_, config_, args);
}

}  // namespace metrale
