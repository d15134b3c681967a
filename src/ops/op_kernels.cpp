// op_kernels.cpp: the library's kernels declared to a KernelCatalog (each op's by its folder's
// add_<op>_kernels, from the list in ops/core/library_ops.cpp), and a target entry's variant
// through a catalog (declaring them to a registry: op_kernel_declare.cpp).
#include "ops/op_kernels.hpp"

#include <fmt/format.h>

#include "metrale/error.hpp"
#include "metrale/ops/op_declaration.hpp"
#include "ops/core/library_ops.hpp"
#include "target/kernel_catalog.hpp"

namespace metrale::ops {
namespace {

KernelCatalog make_library_catalog() {
  KernelCatalog catalog;
  for (const LibraryOp& op : library_op_list()) {
    op.add_kernels(catalog);
  }
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
