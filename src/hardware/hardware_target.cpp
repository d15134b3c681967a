// hardware_target.cpp: lookups on a loaded target.
#include "metrale/target/hardware_target.hpp"

#include <algorithm>

namespace metrale {

const KernelEntry* HardwareTarget::find_kernel(std::string_view kernel_name) const {
  auto it = std::lower_bound(kernels.begin(), kernels.end(), kernel_name,
                             [](const KernelEntry& entry, std::string_view key) { return entry.name < key; });
  return it != kernels.end() && it->name == kernel_name ? &*it : nullptr;
}

}  // namespace metrale
