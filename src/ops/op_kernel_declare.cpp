// ops/op_kernel_declare.cpp: a target's kernels declared to a registry. Apart from
// op_kernels.cpp, whose catalog and rules the parsers (and their fuzzers) use without the JIT.
#include "metrale/jit/kernel_registry.hpp"
#include "ops/op_kernels.hpp"

namespace metrale::ops {

std::map<std::string, VariantId, std::less<>> declare_target_kernels(KernelRegistry& registry,
                                                                     const HardwareTarget& target,
                                                                     const KernelCatalog& catalog) {
  std::map<std::string, VariantId, std::less<>> ids;
  for (const KernelEntry& entry : target.kernels) {
    ids.emplace(entry.name, registry.declare(target_kernel_variant(target, entry, catalog)));
  }
  return ids;
}

}  // namespace metrale::ops
