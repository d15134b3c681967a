// host/host_kernel_table.cpp: lookup by (kernel, params), and the argument check of a launch.
#include "host/host_kernel_table.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "metrale/error.hpp"

namespace metrale {

namespace host::detail {

std::string default_display_name(const std::string& kernel, const KernelParams& params) {
  return kernel + "<" + params.tag() + ">";
}

}  // namespace host::detail

void check_kernel_args(const HostKernelInfo& kernel, std::span<const KernelArg> args) {
  if (args.size() != kernel.parameter_sizes.size()) {
    throw BackendError(fmt::format("kernel {} takes {} arguments, the launch passes {}", kernel.display_name,
                                   kernel.parameter_sizes.size(), args.size()));
  }
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i].size != kernel.parameter_sizes[i]) {
      throw BackendError(fmt::format("kernel {}: argument {} is {} bytes, the parameter is {} bytes",
                                     kernel.display_name, i, args[i].size, kernel.parameter_sizes[i]));
    }
    if (args[i].value == nullptr) {
      throw BackendError(fmt::format("kernel {}: argument {} has no value (null address)", kernel.display_name, i));
    }
  }
}

void HostKernelTable::add(HostKernelInfo kernel) {
  if (kernel.invoke == nullptr) {
    throw BackendError(fmt::format("host kernel {} has no body", kernel.display_name));
  }
  if (find(kernel.kernel, kernel.params) != nullptr) {
    throw BackendError(
        fmt::format("host kernel '{}' with params {} is registered twice", kernel.kernel, kernel.params.tag()));
  }
  kernels_.push_back(std::move(kernel));
}

const HostKernelInfo* HostKernelTable::find(std::string_view kernel, const KernelParams& params) const {
  const auto found = std::find_if(kernels_.begin(), kernels_.end(), [&](const HostKernelInfo& entry) {
    return entry.kernel == kernel && entry.params == params;
  });
  return found == kernels_.end() ? nullptr : &*found;
}

std::string HostKernelTable::list() const {
  std::string out;
  for (const HostKernelInfo& entry : kernels_) {
    out += (out.empty() ? "" : ", ") + host::detail::default_display_name(entry.kernel, entry.params);
  }
  return out.empty() ? std::string("none") : out;
}

}  // namespace metrale
