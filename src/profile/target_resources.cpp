// profile/target_resources.cpp: ptxas resources of a target's kernels through the registry.
#include "profile/target_resources.hpp"

#include <vector>

#include "ground/log.hpp"
#include "jit/compiled_entry.hpp"
#include "metrale/error.hpp"
#include "metrale/jit/kernel_registry.hpp"
#include "ops/op_kernels.hpp"

namespace metrale {

std::map<std::string, KernelResources, std::less<>> target_kernel_resources(const HardwareTarget& target) {
  std::map<std::string, KernelResources, std::less<>> out;
  if (target.arch.empty()) {
    return out;
  }
  SourceSet sources;
  sources.add_embedded_templates();
  KernelRegistry registry(std::move(sources));
  std::vector<VariantId> ids;
  for (const auto& [name, id] : ops::declare_target_kernels(registry, target)) {
    ids.push_back(id);
  }
  try {
    for (const BuildRecord& record : registry.build(target.arch, ids)) {
      if (record.ok() && record.entry && record.entry->resources) {
        out.emplace(record.kernel, *record.entry->resources);
      }
    }
  } catch (const Error& error) {
    logger().info("profile: no registers or occupancy for {}: {}", target.name, error.what());
  }
  return out;
}

}  // namespace metrale
