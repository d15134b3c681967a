// op_kernels.cpp: the library's five kernels declared to a KernelCatalog, and a target entry's
// variant through a catalog (declaring them to a registry: op_kernel_declare.cpp).
#include "ops/op_kernels.hpp"

#include <fmt/format.h>

#include "metrale/error.hpp"
#include "ops/op_kernel_rules.hpp"
#include "target/kernel_catalog.hpp"

namespace metrale::ops {
namespace {

KernelCatalog make_library_catalog() {
  const auto named = [](std::string_view template_name, std::string_view args) {
    return fmt::format("{}<{}>", template_name, args);
  };
  KernelCatalog catalog;
  catalog.add({std::string(kBaGatesParentKernel),
               std::string(kBaGatesTemplateFile),
               named(kBaGatesParentTemplate, "{block}, {lanes}"),
               {"block", "lanes"},
               {},
               false,
               false,
               check_ssm_ba_gates});
  catalog.add({std::string(kBaGatesTwinKernel),
               std::string(kBaGatesTemplateFile),
               named(kBaGatesTwinTemplate, "{block}, {lanes}, {groups}"),
               {"block", "lanes", "groups"},
               std::string(kBaGatesParentKernel),
               true,
               true,
               check_ssm_ba_gates_hopper});
  // Declared in the background like a twin: until it arrives its guard says "kernel absent".
  catalog.add({std::string(kBaGatesMmaKernel),
               std::string(kBaGatesMmaTemplateFile),
               named(kBaGatesMmaTemplate, "{block}, {lanes}"),
               {"block", "lanes"},
               {},
               false,
               true,
               check_ssm_ba_gates_mma});
  catalog.add({std::string(kFp8QuantSharedKernel),
               std::string(kFp8QuantTemplateFile),
               named(kFp8QuantSharedTemplate, "{lanes}, {groups}"),
               {"lanes", "groups"},
               {},
               false,
               false,
               check_fp8_act_quant});
  // The FP8 group max is exact in any order, so its twin may split a group differently.
  catalog.add({std::string(kFp8QuantTwinKernel),
               std::string(kFp8QuantTemplateFile),
               named(kFp8QuantTwinTemplate, "{lanes}, {groups}"),
               {"lanes", "groups"},
               std::string(kFp8QuantSharedKernel),
               false,
               true,
               check_fp8_act_quant_hopper});
  return catalog;
}

}  // namespace

const KernelCatalog& library_catalog() {
  static const KernelCatalog catalog = make_library_catalog();
  return catalog;
}

std::optional<KernelParamsProblem> check_kernel_params(std::string_view kernel, const KernelParams& params) {
  return library_catalog().check(kernel, params);
}

std::optional<std::string> kernel_params_violation(std::string_view kernel, const KernelParams& params) {
  auto found = check_kernel_params(kernel, params);
  if (!found) {
    return std::nullopt;
  }
  return std::move(found->reason);
}

std::optional<KernelVariant> op_kernel_variant(std::string_view kernel, const KernelParams& params) {
  if (library_catalog().find(kernel) == nullptr) {
    return std::nullopt;
  }
  return library_catalog().variant(kernel, params);
}

KernelVariant target_kernel_variant(const HardwareTarget& target, const KernelEntry& entry,
                                    const KernelCatalog& catalog) {
  if (!entry.source.empty()) {
    return KernelVariant{entry.name, entry.source, expand_kernel_expression(entry.expression, entry.params),
                         entry.params, false};
  }
  if (catalog.find(entry.name) == nullptr) {
    throw ConfigError(fmt::format("{}: kernels.{}: no declaration of this kernel (known: {})", target.source,
                                  entry.name, fmt::join(catalog.names(), ", ")));
  }
  return catalog.variant(entry.name, entry.params);
}

}  // namespace metrale::ops
