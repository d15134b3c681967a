// op_kernels.cpp: the library's kernels declared to a KernelCatalog (each op's by its folder's
// add_<op>_kernels, from the list in ops/core/library_ops.cpp), and a target entry's variant
// through a catalog (declaring them to a registry: op_kernel_declare.cpp). The launch sites' parameter
// check keeps a per-thread memo of the clean pairs it answered (pure over a catalog that never changes).
#include "ops/op_kernels.hpp"

#include <fmt/format.h>

#include <array>

#include "hardware/kernel_catalog.hpp"
#include "metrale/error.hpp"
#include "metrale/ops/op_declaration.hpp"
#include "ops/core/library_ops.hpp"

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

namespace {

// The last few (kernel, params) pairs this thread found clean. The check is pure over the library's
// catalog (built once, never changed), and every launch of an op asks it again for the same few
// variants, so a hit answers it in a handful of compares instead of a catalog search per launch.
struct CleanParams {
  std::string_view kernel;  // the launch sites' names: constants of static storage
  KernelParams params;
};
constexpr std::size_t kCleanParamsKept = 8;
thread_local std::array<CleanParams, kCleanParamsKept> t_clean_params{};
thread_local std::size_t t_clean_params_next = 0;

}  // namespace

std::optional<std::string> kernel_params_violation(std::string_view kernel, const KernelParams& params) {
  for (const CleanParams& clean : t_clean_params) {
    if (clean.params == params && clean.kernel == kernel && !kernel.empty()) {
      return std::nullopt;
    }
  }
  auto found = check_kernel_params(kernel, params);
  if (!found) {
    // Kept by value: the name's bytes must outlive the memo, so only a name the catalog holds
    // (its declaration's own string) is remembered.
    if (const KernelDeclaration* declaration = library_catalog().find(kernel)) {
      t_clean_params[t_clean_params_next] = CleanParams{declaration->kernel, params};
      t_clean_params_next = (t_clean_params_next + 1) % kCleanParamsKept;
    }
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
