// metrale/ops/op_kernels.hpp: how the library's own kernels are declared to the registry: the
// template file and name expression of every kernel a HARDWARE.toml may ship.
// Invariants: this is the one place that spells a name expression; a twin is declared as a
// background variant (it may arrive after the runtime opens, and the guards then pick the
// parent, which computes the same bytes).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "metrale/jit/kernel_registry.hpp"
#include "metrale/target/hardware_target.hpp"

namespace metrale::ops {

// The registry variant for one shipped kernel entry; nullopt for a kernel name the library
// does not know (the HARDWARE.toml loader refuses those before they get here).
std::optional<KernelVariant> op_kernel_variant(std::string_view kernel, const KernelParams& params);

// Declares every kernel the target ships; returns kernel name -> variant id.
std::map<std::string, VariantId, std::less<>> declare_target_kernels(KernelRegistry& registry,
                                                                     const HardwareTarget& target);

}  // namespace metrale::ops
