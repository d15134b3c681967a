// profile/target_resources.cpp: ptxas resources of a target's kernels (and of their shape-specialised
// variants) through the registry.
#include "profile/target_resources.hpp"

#include <vector>

#include "ground/log.hpp"
#include "jit/compiled_entry.hpp"
#include "metrale/error.hpp"
#include "metrale/jit/kernel_registry.hpp"
#include "ops/op_kernels.hpp"
#include "ops/pinned_shapes.hpp"

namespace metrale {

namespace {

using ResourceMap = std::map<std::string, KernelResources, std::less<>>;

// Builds the variants `declare` adds to a registry of the embedded templates for the target's
// arch; kernel name -> its ptxas report.
template <typename Declare>
ResourceMap built_resources(const HardwareTarget& target, Declare declare) {
  ResourceMap out;
  if (target.arch.empty()) {
    return out;
  }
  SourceSet sources;
  sources.add_embedded_templates();
  KernelRegistry registry(std::move(sources));
  const std::vector<VariantId> ids = declare(registry);
  if (ids.empty()) {
    return out;
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

}  // namespace

ResourceMap target_kernel_resources(const HardwareTarget& target) {
  return built_resources(target, [&](KernelRegistry& registry) {
    std::vector<VariantId> ids;
    for (const auto& [name, id] : ops::declare_target_kernels(registry, target)) {
      ids.push_back(id);
    }
    return ids;
  });
}

ResourceMap shape_variant_resources(const HardwareTarget& target, std::span<const ProfiledShapeConstant> constants) {
  return built_resources(target, [&](KernelRegistry& registry) {
    std::vector<VariantId> ids;
    for (const ProfiledShapeConstant& constant : constants) {
      const std::optional<KernelVariant> variant =
          constant.shape != 0 ? ops::shape_variant_of(target, constant.kernel, constant.shape) : std::nullopt;
      if (variant) {
        ids.push_back(registry.declare(*variant));
      }
    }
    return ids;
  });
}

}  // namespace metrale
