// ops/op_kernels.hpp: the library's own kernels as one KernelCatalog (the one an engine's kernels
// join), made from each op's catalog declarations (template file, name expression pattern,
// parameters, rules: its folder's add_<op>_kernels), and a target entry's variant through it.
// Invariants: each op's folder is the one place that spells its name expressions; a twin is
// declared as a background variant (it may arrive after the runtime opens, and the guards then
// pick the parent, which computes the same bytes).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "hardware/kernel_catalog.hpp"
#include "metrale/jit/kernel_registry.hpp"
#include "metrale/target/hardware_target.hpp"

namespace metrale::ops {

// The library's kernels (every op's add_<op>_kernels, ops/core/library_ops.cpp), declared once per
// process.
const KernelCatalog& library_catalog();

// The first rule `params` breaks for one of the library's kernels, or nullopt. Pure.
std::optional<KernelParamsProblem> check_kernel_params(std::string_view kernel, const KernelParams& params);
// The same, as one sentence ("groups = 20: must be in [1, 16] ..."). Pure.
std::optional<std::string> kernel_params_violation(std::string_view kernel, const KernelParams& params);

// The registry variant of one of the library's kernels; nullopt for a name it does not know.
std::optional<KernelVariant> op_kernel_variant(std::string_view kernel, const KernelParams& params);

// The registry variant of one shipped entry: from the entry itself when the target file declares
// it in full, else from `catalog`. ConfigError naming the file when the catalog lacks it.
KernelVariant target_kernel_variant(const HardwareTarget& target, const KernelEntry& entry,
                                    const KernelCatalog& catalog);

// Declares every kernel the target ships; returns kernel name -> variant id.
std::map<std::string, VariantId, std::less<>> declare_target_kernels(KernelRegistry& registry,
                                                                     const HardwareTarget& target,
                                                                     const KernelCatalog& catalog = library_catalog());

}  // namespace metrale::ops
