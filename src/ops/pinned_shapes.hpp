// ops/pinned_shapes.hpp: the shape-specialised variants pinned values ask for (a target's
// [shapes], RuntimeOptions::shapes), through the op declarations' shape constants: which kernel at
// which parameters, and which values stay generic and why. The runtime declares them before its
// one load batch and leaves their kernels' generic forms to first sight; `metrale-jit build`
// compiles them (the generic forms too with --with-generic or --bundle) and `--bundle` ships them.
// Invariants: pure given the op set; an op or argument with no shape constant is a ConfigError
// naming where the pin came from (file:line: shapes.<op>.<arg>); a role the target does not ship
// yields nothing; each (kernel, params) appears once.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "metrale/gpu/kernel_params.hpp"
#include "metrale/jit/kernel_registry.hpp"
#include "metrale/ops/op_declaration.hpp"
#include "metrale/target/hardware_target.hpp"

namespace metrale::ops {

struct PinRequest {
  std::string where;  // "hardware/hopper/HARDWARE.toml:40: shapes.ssm_ba_gates.n"
  std::string op;     // a name or alias
  std::string arg;
  std::vector<std::uint64_t> values;
};

struct PinnedVariant {
  std::string kernel;
  KernelParams params;  // the shipped entry's, with shape set
};

struct PinnedRefusal {
  std::string where;
  std::uint64_t value = 0;
  std::string_view reason;  // the rule's
};

struct PinnedPlan {
  std::vector<PinnedVariant> variants;
  std::vector<PinnedRefusal> refused;
};

// The target's [shapes] as requests.
std::vector<PinRequest> target_pins(const HardwareTarget& target);
// "op.arg" -> values (RuntimeOptions::shapes) as requests; ConfigError for a key without a dot.
PinRequest options_pin(std::string_view key, std::vector<std::uint64_t> values);

PinnedPlan plan_pinned_shapes(const HardwareTarget& target, std::span<const PinRequest> pins, const OpSet& ops);

// The variant of `kernel` (a kernel the target ships) specialised at `shape`: the shipped entry's
// parameters with shape set, through the library catalog's expression (or the entry's own).
// nullopt when the target does not ship `kernel`.
std::optional<KernelVariant> shape_variant_of(const HardwareTarget& target, std::string_view kernel,
                                              std::uint32_t shape);

// Declares the variants the target's own [shapes] ask for (the library catalog's expressions, or
// the entry's own for a kernel the file declares in full); returns their ids, in plan order.
std::vector<VariantId> declare_pinned_shape_variants(KernelRegistry& registry, const HardwareTarget& target,
                                                     const OpSet& ops);

// Leaves the generic form of every kernel that `pinned` (ids of specialised variants) specialise
// out of the registry's load() and build() (KernelRegistry::load_only_on_request), and returns
// the generic forms' ids, once each, in `pinned`'s order. The generic compiles slowest (every
// shape's code in one image); an engine that pinned its shapes meets it only on a value no pin
// covers, so it is built on first sight like any unpinned value's variant.
std::vector<VariantId> defer_generic_forms(KernelRegistry& registry, std::span<const VariantId> pinned);

}  // namespace metrale::ops
