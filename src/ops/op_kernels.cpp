// op_kernels.cpp: the library's kernels declared to a KernelCatalog (the SiLU-and-mul FP8 op's
// in ops/silu_mul_fp8_quant_kernels.cpp), and a target entry's variant through a catalog
// (declaring them to a registry: op_kernel_declare.cpp).
#include "ops/op_kernels.hpp"

#include <fmt/format.h>

#include "metrale/error.hpp"
#include "metrale/ops/op_declaration.hpp"
#include "ops/op_kernel_rules.hpp"
#include "ops/silu_mul_fp8_quant/silu_mul_fp8_quant.hpp"
#include "target/kernel_catalog.hpp"

namespace metrale::ops {
namespace {

KernelCatalog make_library_catalog() {
  const auto named = [](std::string_view template_name, std::string_view args) {
    return fmt::format("{}<{}>", template_name, args);
  };
  KernelCatalog catalog;
  catalog.add({.kernel = std::string(kBaGatesParentKernel),
               .source = std::string(kBaGatesTemplateFile),
               .expression = named(kBaGatesParentTemplate, "{block}, {lanes}"),
               .params = {"block", "lanes"},
               .twin_of = {},  // not a twin
               .same_shape = false,
               .background = false,
               .rule = check_ssm_ba_gates});
  catalog.add({.kernel = std::string(kBaGatesTwinKernel),
               .source = std::string(kBaGatesTemplateFile),
               .expression = named(kBaGatesTwinTemplate, "{block}, {lanes}, {groups}"),
               .params = {"block", "lanes", "groups"},
               .twin_of = std::string(kBaGatesParentKernel),
               .same_shape = true,
               .background = true,
               .rule = check_ssm_ba_gates_hopper});
  // Declared in the background like a twin: until it arrives its guard says "kernel absent". Its
  // shape constant ({shape}) is TILES, ceil(N / 16) (0: the generic form).
  catalog.add({.kernel = std::string(kBaGatesMmaKernel),
               .source = std::string(kBaGatesMmaTemplateFile),
               .expression = named(kBaGatesMmaTemplate, "{block}, {lanes}, {groups}, {shape}"),
               .params = {"block", "lanes", "groups"},
               .twin_of = {},  // not a twin
               .same_shape = false,
               .background = true,
               .rule = check_ssm_ba_gates_mma});
  catalog.add({.kernel = std::string(kFp8QuantSharedKernel),
               .source = std::string(kFp8QuantTemplateFile),
               .expression = named(kFp8QuantSharedTemplate, "{lanes}, {groups}"),
               .params = {"lanes", "groups"},
               .twin_of = {},  // not a twin
               .same_shape = false,
               .background = false,
               .rule = check_fp8_act_quant});
  // The FP8 group max is exact in any order, so its twin may split a group differently.
  catalog.add({.kernel = std::string(kFp8QuantTwinKernel),
               .source = std::string(kFp8QuantTemplateFile),
               .expression = named(kFp8QuantTwinTemplate, "{lanes}, {groups}"),
               .params = {"lanes", "groups"},
               .twin_of = std::string(kFp8QuantSharedKernel),
               .same_shape = false,
               .background = true,
               .rule = check_fp8_act_quant_hopper});
  add_silu_mul_fp8_quant_kernels(catalog);
  return catalog;
}

}  // namespace

const KernelCatalog& library_catalog() {
  static const KernelCatalog catalog = [] {
    KernelCatalog made = make_library_catalog();
    // The levers a [defaults] table may name: every library op's.
    for (LeverSpec& lever : library_ops().levers()) {
      made.add_lever(std::move(lever));
    }
    return made;
  }();
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
