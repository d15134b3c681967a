// host/host_kernel_table.hpp: the host kernels a HostBackend can load, by kernel name and
// template parameters (the same key the registry builds with NVRTC).
// Invariant: at most one entry per (kernel, params); adding a second is an error, not a silent
// replacement.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "metrale/host/host_kernel.hpp"

namespace metrale {

class HostKernelTable {
 public:
  // Throws BackendError when (kernel, params) is already present or the entry has no body.
  void add(HostKernelInfo kernel);
  // Null when absent.
  [[nodiscard]] const HostKernelInfo* find(std::string_view kernel, const KernelParams& params) const;
  // "ssm_ba_gates<b256l64>, ...": every entry, for error messages and the CLI.
  [[nodiscard]] std::string list() const;
  [[nodiscard]] std::size_t size() const { return kernels_.size(); }
  // Every entry, in the order added.
  [[nodiscard]] const std::vector<HostKernelInfo>& entries() const { return kernels_; }

 private:
  std::vector<HostKernelInfo> kernels_;
};

}  // namespace metrale
