// metrale/target/hardware_target.hpp: one target as read from its HARDWARE.toml, and the
// catalog its [kernels] and [defaults] tables are checked against (kernels and levers).
// Invariants (established by the loader): kernels are sorted by name and each is in the catalog
// (the library's, an engine's, or declared in full by a target file) and passes its rules;
// compute_capability is nullopt only for the generic target, whose arch stays empty and
// sm_count nullopt until select_target fills them from the device.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "metrale/gpu/compute_capability.hpp"
#include "metrale/gpu/kernel_params.hpp"
#include "metrale/jit/kernel_registry.hpp"

namespace metrale {

// A target's [roofline] table: the ceilings the profile's cost model divides by
// (src/profile/cost_model.hpp); each HARDWARE.toml says where its numbers come from.
// Invariant (established by the loader): every value is finite and inside its key's range.
struct Roofline {
  double dram_gb_per_s = 0;       // device memory, GB/s (10^9 bytes), read + write
  double l2_gb_per_s = 0;         // L2 <-> SM, GB/s
  double fp32_tflops = 0;         // FP32 FMA throughput, TFLOP/s (an FMA is 2 FLOPs)
  double bf16_tensor_tflops = 0;  // dense bf16 tensor-core throughput, TFLOP/s
  double launch_overhead_us = 0;  // added to every kernel's predicted time
  // The round trip of one wave of a block's in-flight asynchronous copies, us (fitted): the
  // pipeline-latency term's unit (Little's law).
  double memory_latency_us = 0;
};

struct KernelEntry {
  std::string name;
  KernelParams params;
  // Set only for a kernel the target file declares in full
  // (`k = { block = 128, source = "k.cuh", expression = "engine::k<{block}>" }`).
  std::string source;
  std::string expression;
  std::uint32_t line = 0;  // of its key in the file (0 when unknown)
};

// Which parameter breaks which rule; param is "block", "lanes", "groups", or "" when the
// kernel name itself is unknown.
struct KernelParamsProblem {
  std::string_view param;
  std::string reason;
};

// One kernel a HARDWARE.toml may ship, as the library's ops or an engine declare it.
struct KernelDeclaration {
  std::string kernel;  // "ssm_ba_gates": its key in a [kernels] table
  std::string source;  // "ssm_ba_gates.cuh": a member of the registry's SourceSet
  // "metrale::kernels::x<{block}, {lanes}>": {block}, {lanes}, {groups} filled in; a {shape}
  // placeholder makes the kernel take a shape constant (KernelParams::shape; 0: the generic form).
  std::string expression;
  // The parameters an entry must set, of "block", "lanes", "groups"; the others must be absent.
  std::vector<std::string> params;
  std::string twin_of;      // the parent whose bytes this twin reproduces; empty: not a twin
  bool same_shape = false;  // a twin whose block and lanes must equal its parent's
  bool background = false;  // may arrive after the runtime opens
  // The template's own constraints beyond which parameters are set; empty: none.
  std::function<std::optional<KernelParamsProblem>(const KernelParams&)> rule;
};

// One lever as an op declares it (ops/op_declaration.hpp): its [defaults] key and its
// environment variable. A required lever must appear in every HARDWARE.toml's [defaults]
// (the library's own levers are); an engine's may be left out of a file (then built-in off).
struct LeverSpec {
  std::string toml_key;  // "ssm_ba_gates_hopper"
  std::string env_var;   // "METRALE_SSM_BA_GATES_HOPPER"; empty: METRALE_ + the key in capitals
  bool required_in_file = true;
  std::string doc;  // one line: what turning it on asks for

  // env_var, or the spelling derived from the key.
  [[nodiscard]] std::string environment_variable() const;
};

// The kernels a HARDWARE.toml may name. The library's ops declare theirs through add(), as an
// engine does; the target loader only checks entries against what the catalog holds.
class KernelCatalog {
 public:
  // ArgumentError for an empty field, a parameter other than block/lanes/groups, a placeholder
  // of a parameter not declared, or the same kernel declared again with another source or
  // expression (the same declaration again is accepted).
  void add(KernelDeclaration declaration);
  [[nodiscard]] const KernelDeclaration* find(std::string_view kernel) const;
  [[nodiscard]] std::vector<std::string> names() const;  // sorted
  [[nodiscard]] const std::vector<KernelDeclaration>& declarations() const { return declarations_; }

  // The levers a [defaults] table may name, as the ops declare them. ArgumentError for an
  // empty key; the same key again keeps the first spec (two ops may share a lever).
  void add_lever(LeverSpec lever);
  [[nodiscard]] const LeverSpec* find_lever(std::string_view toml_key) const;
  [[nodiscard]] const std::vector<LeverSpec>& levers() const { return levers_; }

  // The first problem of `params` for `kernel` (param "" when the kernel is unknown), or
  // nullopt. Pure.
  [[nodiscard]] std::optional<KernelParamsProblem> check(std::string_view kernel, const KernelParams& params) const;
  // The registry variant of `kernel` with `params` (expression filled in); ArgumentError when
  // the kernel is unknown.
  [[nodiscard]] KernelVariant variant(std::string_view kernel, const KernelParams& params) const;

 private:
  std::vector<KernelDeclaration> declarations_;
  std::vector<LeverSpec> levers_;
};

// `pattern` with {block}, {lanes} and {groups} replaced by the values of `params`; ArgumentError
// naming any other {placeholder}. Pure.
std::string expand_kernel_expression(std::string_view pattern, const KernelParams& params);

// Shape constants an engine runs, pinned so open() and `build --bundle` build their specialised
// variants up front: one [shapes] key "<op>.<argument>" with its values ("ssm_ba_gates.n = [96]").
// Which op and argument, and whether the value specialises, the op declaration's shape constants
// say (ops/pinned_shapes.hpp); the loader checks the key's form, the values and duplicates.
struct PinnedShape {
  std::string op;   // "ssm_ba_gates" (an op's name or alias)
  std::string arg;  // "n"
  std::vector<std::uint64_t> values;
  std::uint32_t line = 0;  // in the file; 0 when not from a file
};

struct HardwareTarget {
  std::string name;
  // nullopt = generic: serves any device no other target claims.
  std::optional<ComputeCapability> compute_capability;
  // "sm_90"; for generic empty until select_target fills in the device's.
  std::string arch;
  // nullopt = taken from the device.
  std::optional<std::uint32_t> sm_count;
  // Sorted by name.
  std::vector<KernelEntry> kernels;
  // The [defaults] levers, by TOML key.
  std::map<std::string, bool, std::less<>> defaults;
  // The [shapes] table, in file order; empty when the file has none.
  std::vector<PinnedShape> shapes;
  // The [roofline] table; nullopt when the file has none (the profile then refuses the target).
  std::optional<Roofline> roofline;
  // "hardware/hopper/HARDWARE.toml" or "<embedded>/hopper/HARDWARE.toml".
  std::string source;

  // The shipped kernel of that name, or nullptr when this target does not ship it.
  [[nodiscard]] const KernelEntry* find_kernel(std::string_view kernel_name) const;
};

}  // namespace metrale
