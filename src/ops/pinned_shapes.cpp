// pinned_shapes.cpp: pinned shape values -> the specialised variants they ask for.
#include "ops/pinned_shapes.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "metrale/error.hpp"
#include "ops/op_kernels.hpp"

namespace metrale::ops {

std::vector<PinRequest> target_pins(const HardwareTarget& target) {
  std::vector<PinRequest> pins;
  for (const PinnedShape& pinned : target.shapes) {
    pins.push_back(PinRequest{fmt::format("{}:{}: shapes.{}.{}", target.source, pinned.line, pinned.op, pinned.arg),
                              pinned.op, pinned.arg, pinned.values});
  }
  return pins;
}

PinRequest options_pin(std::string_view key, std::vector<std::uint64_t> values) {
  const std::size_t dot = key.rfind('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == key.size()) {
    throw ConfigError(fmt::format("RuntimeOptions::shapes: key '{}' is not <op>.<argument>", key));
  }
  return PinRequest{fmt::format("RuntimeOptions::shapes[{}]", key), std::string(key.substr(0, dot)),
                    std::string(key.substr(dot + 1)), std::move(values)};
}

PinnedPlan plan_pinned_shapes(const HardwareTarget& target, std::span<const PinRequest> pins, const OpSet& ops) {
  PinnedPlan plan;
  for (const PinRequest& pin : pins) {
    const OpDeclaration* op = ops.find(pin.op);
    if (op == nullptr) {
      throw ConfigError(
          fmt::format("{}: no op named '{}' (known: {})", pin.where, pin.op, fmt::join(ops.names(), ", ")));
    }
    const auto constant = std::find_if(op->shape_constants.begin(), op->shape_constants.end(),
                                       [&](const ShapeConstantDecl& c) { return c.arg == pin.arg; });
    if (constant == op->shape_constants.end()) {
      std::vector<std::string_view> known;
      for (const ShapeConstantDecl& c : op->shape_constants) {
        known.push_back(c.arg);
      }
      throw ConfigError(fmt::format("{}: op {} has no shape constant '{}' (it has: {})", pin.where, op->name, pin.arg,
                                    known.empty() ? "none" : fmt::format("{}", fmt::join(known, ", "))));
    }
    const RoleDecl& role = op->roles[op->role_index(constant->role).value_or(0)];
    const KernelEntry* shipped = target.find_kernel(role.kernel);
    if (shipped == nullptr) {
      continue;
    }
    for (const std::uint64_t value : pin.values) {
      const ShapeChoice choice = constant->rule(value);
      if (choice.shape == 0) {
        plan.refused.push_back(PinnedRefusal{pin.where, value, choice.refusal});
        continue;
      }
      KernelParams params = shipped->params;
      params.shape = choice.shape;
      const bool known = std::any_of(plan.variants.begin(), plan.variants.end(), [&](const PinnedVariant& v) {
        return v.kernel == role.kernel && v.params == params;
      });
      if (!known) {
        plan.variants.push_back(PinnedVariant{role.kernel, params});
      }
    }
  }
  return plan;
}

std::vector<VariantId> declare_pinned_shape_variants(KernelRegistry& registry, const HardwareTarget& target,
                                                     const OpSet& ops) {
  const std::vector<PinRequest> pins = target_pins(target);
  std::vector<VariantId> ids;
  for (const PinnedVariant& pinned : plan_pinned_shapes(target, pins, ops).variants) {
    if (const std::optional<KernelVariant> variant = shape_variant_of(target, pinned.kernel, pinned.params.shape)) {
      ids.push_back(registry.declare(*variant));
    }
  }
  return ids;
}

std::optional<KernelVariant> shape_variant_of(const HardwareTarget& target, std::string_view kernel,
                                              std::uint32_t shape) {
  const KernelEntry* shipped = target.find_kernel(kernel);
  if (shipped == nullptr) {
    return std::nullopt;
  }
  KernelEntry entry = *shipped;
  entry.params.shape = shape;
  return target_kernel_variant(target, entry, library_catalog());
}

std::vector<VariantId> defer_generic_forms(KernelRegistry& registry, std::span<const VariantId> pinned) {
  std::vector<VariantId> generic;
  for (const VariantId id : pinned) {
    KernelVariant variant = registry.variant(id);
    variant.params.shape = 0;
    const std::optional<VariantId> form = registry.find(variant.kernel, variant.params);
    if (form && std::find(generic.begin(), generic.end(), *form) == generic.end()) {
      registry.load_only_on_request(*form);
      generic.push_back(*form);
    }
  }
  return generic;
}

}  // namespace metrale::ops
