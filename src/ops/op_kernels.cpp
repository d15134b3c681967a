// op_kernels.cpp: name expressions of the five kernels, built from their parameters.
#include "ops/op_kernels.hpp"

#include <fmt/format.h>

#include "metrale/error.hpp"
#include "metrale/ops/fp8_act_quant.hpp"
#include "metrale/ops/ssm_ba_gates.hpp"
#include "target/kernel_catalog.hpp"

namespace metrale::ops {

std::optional<KernelVariant> op_kernel_variant(std::string_view kernel, const KernelParams& params) {
  KernelVariant variant;
  variant.kernel = std::string(kernel);
  variant.params = params;
  if (kernel == kBaGatesParentKernel) {
    variant.source = std::string(kBaGatesTemplateFile);
    variant.name_expression = fmt::format("{}<{}, {}>", kBaGatesParentTemplate, params.block, params.lanes);
  } else if (kernel == kBaGatesTwinKernel) {
    variant.source = std::string(kBaGatesTemplateFile);
    variant.name_expression =
        fmt::format("{}<{}, {}, {}>", kBaGatesTwinTemplate, params.block, params.lanes, params.groups);
    variant.background = true;
  } else if (kernel == kBaGatesMmaKernel) {
    // Declared in the background like a twin: until it arrives its guard says "kernel absent".
    variant.source = std::string(kBaGatesMmaTemplateFile);
    variant.name_expression = fmt::format("{}<{}, {}>", kBaGatesMmaTemplate, params.block, params.lanes);
    variant.background = true;
  } else if (kernel == kFp8QuantSharedKernel) {
    variant.source = std::string(kFp8QuantTemplateFile);
    variant.name_expression = fmt::format("{}<{}, {}>", kFp8QuantSharedTemplate, params.lanes, params.groups);
  } else if (kernel == kFp8QuantTwinKernel) {
    variant.source = std::string(kFp8QuantTemplateFile);
    variant.name_expression = fmt::format("{}<{}, {}>", kFp8QuantTwinTemplate, params.lanes, params.groups);
    variant.background = true;
  } else {
    return std::nullopt;
  }
  return variant;
}

std::map<std::string, VariantId, std::less<>> declare_target_kernels(KernelRegistry& registry,
                                                                     const HardwareTarget& target) {
  std::map<std::string, VariantId, std::less<>> ids;
  for (const KernelEntry& entry : target.kernels) {
    auto variant = op_kernel_variant(entry.name, entry.params);
    if (!variant) {
      throw ConfigError(fmt::format("{}: kernels.{}: no template is known for this kernel", target.source, entry.name));
    }
    ids.emplace(entry.name, registry.declare(std::move(*variant)));
  }
  return ids;
}

}  // namespace metrale::ops
