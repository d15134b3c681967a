// kernel_launch.cpp: turns the builder's slots into the backend's argument list.
#include "metrale/gpu/kernel_launch.hpp"

#include <string>

#include "metrale/error.hpp"

namespace metrale {

KernelLaunch& KernelLaunch::arg_bytes(const void* value, std::size_t size) {
  if (value == nullptr || size == 0 || size > kSlotBytes) {
    throw ArgumentError("kernel argument " + std::to_string(count_) + ": " +
                        (value == nullptr ? std::string("its address is null")
                                          : "size " + std::to_string(size) + " is not in [1, 16] bytes"));
  }
  Slot& slot = next_slot();
  std::memcpy(slot.bytes.data(), value, size);
  slot.size = size;
  return *this;
}

KernelLaunch::Slot& KernelLaunch::next_slot() {
  if (count_ == slots_.size()) {
    throw ArgumentError("kernel argument " + std::to_string(count_) + ": a launch passes at most " +
                        std::to_string(slots_.size()) + " arguments");
  }
  Slot& slot = slots_[count_++];
  slot = Slot{};
  return slot;
}

void KernelLaunch::launch(std::uint64_t stream) {
  if (!kernel_.present()) {
    throw BackendError("launch of an absent kernel (handle 0): the kernel was not built for this target");
  }
  if (config_.grid.volume() == 0 || config_.block.volume() == 0) {
    throw BackendError("launch with an empty grid " + to_string(config_.grid) + " or block " +
                       to_string(config_.block));
  }
  std::array<KernelArg, kMaxKernelArgs> args{};
  for (std::size_t i = 0; i < count_; ++i) {
    args[i] = KernelArg{slots_[i].bytes.data(), slots_[i].size};
  }
  config_.stream = stream;
  gpu_.launch(kernel_, config_, std::span<const KernelArg>(args.data(), count_));
}

}  // namespace metrale
