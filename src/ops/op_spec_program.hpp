// ops/op_spec_program.hpp: an OpSpec compiled once (metrale/ops/op_spec.hpp): its slot table, its
// shape rules, and per role the guard, grid, block and kernel arguments as Expr programs, with the
// guard's log table. Run, explain and the check all read this one object, so they cannot disagree.
// Invariants:
// - slots are laid out once: the arguments (declaration order), then per role block, lanes, groups,
//   present, then sm_count, cc_major, cc_minor, then the levers (declaration order);
// - fill_slots, guard_reason, check_shape_rules and launch_role allocate nothing on the way that
//   succeeds (an error's message, and a new outcome's log line, may);
// - a role's reasons live in the program, so a Pick's verdicts may view them for the op's life.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "metrale/ops/op_declaration.hpp"
#include "ops/op_checks.hpp"
#include "ops/op_expression.hpp"
#include "ops/op_guard_table.hpp"
#include "ops/op_spec.hpp"

namespace metrale::ops {

inline constexpr std::size_t kMaxSpecSlots = kMaxArgs + 4 * kMaxRoles + 3 + kMaxLevers;
using SpecSlots = std::array<std::int64_t, kMaxSpecSlots>;

// The reason a guarded role with its rules holding gets when its kernel cannot run.
inline constexpr std::string_view kSpecKernelAbsent = "kernel absent (not shipped, failed or still building)";

struct CompiledRule {
  std::string reason;
  Expr holds;
};

// One kernel argument: a tensor's address (arg) or an expression's 32-bit value.
struct CompiledKernelArg {
  std::optional<std::size_t> tensor;  // the argument index of a tensor
  std::optional<Expr> value;
};

struct CompiledRole {
  std::string role;
  std::size_t index = 0;  // in the declaration's roles
  std::vector<CompiledRule> guard;
  std::vector<std::string_view> reasons;  // views of guard[i].reason, then kSpecKernelAbsent
  std::unique_ptr<GuardTable> table;      // over `reasons`: the log slots
  std::array<Expr, 3> grid;
  std::array<Expr, 3> block;
  std::vector<CompiledKernelArg> args;
  std::optional<std::size_t> lever;  // index into the op's levers
  std::string lever_env;
  std::optional<double> tolerance;
};

struct SpecProgram {
  std::string op;
  std::vector<ArgDecl> args;
  detail::DeclaredTensors tensors;  // args' tensor rules (views of args' names)
  ExprNames names;
  std::vector<std::optional<Expr>> zero_means;       // per argument
  std::vector<std::vector<Expr>> dims;               // per argument: a tensor's extents (ArgDecl::dims)
  std::vector<CompiledRule> shape_rules;             // over the arguments' names alone
  std::vector<std::unique_ptr<CompiledRole>> roles;  // roles[0] is the parent
  std::size_t role_slots = 0;                        // the first role slot
  std::size_t device_slots = 0;                      // sm_count, cc_major, cc_minor
  std::size_t lever_slots = 0;
  std::size_t lever_count = 0;
  std::optional<std::size_t> m_slot;  // the argument "m", which explain searches over
  std::vector<SpecShape> check_shapes;
};

// Compiles `spec` (ArgumentError naming the op, the role and the expression).
std::shared_ptr<const SpecProgram> compile_spec(const OpSpec& spec);

// The argument slots alone (zero_means applied): what shape rules and zero_means read.
void fill_arg_slots(const SpecProgram& program, OpArgValues values, SpecSlots& slots);

// The slots of one call: `values` in declaration order, the context's kernels (present: their
// handles, or with `shipped_counts` and no device, whether the target ships them), device and levers.
void fill_slots(const SpecProgram& program, const OpContext& context, OpArgValues values, bool shipped_counts,
                SpecSlots& slots);

// The first rule of `role`'s guard that does not hold (then kSpecKernelAbsent when its kernel is
// absent); nullopt: it runs. ArgumentError when a rule faults (division by zero, overflow).
std::optional<std::string_view> guard_reason(const SpecProgram& program, const CompiledRole& role,
                                             const SpecSlots& slots);

// Tensors non-null and aligned, then every shape rule; ArgumentError naming the rule otherwise.
void check_shape_rules(const SpecProgram& program, OpArgValues values, const SpecSlots& slots);

// The block `role` launches with at these slots; ArgumentError as launch_role's.
Dim3 role_block(const SpecProgram& program, const CompiledRole& role, OpArgValues values, const SpecSlots& slots);

// Launches `role`'s kernel with its grid, block and arguments on `stream`.
void launch_role(const SpecProgram& program, const CompiledRole& role, GpuBackend& gpu, KernelHandle handle,
                 OpArgValues values, const SpecSlots& slots, std::uint64_t stream);

// Whether the role's lever asks for it (true for a role without a lever).
bool role_requested(const CompiledRole& role, const SpecSlots& slots, const SpecProgram& program);

// "m=4 k=5120" for the scalars of `values` (messages and log lines).
std::string describe_scalars(const SpecProgram& program, OpArgValues values);

struct OpProfile;
// The profile's hook of an op declared as data (op_spec_profile.cpp): its roles' kernels; the
// scalars named m, n, k (and vheads_per_group when given) from the profiled shape, the others at
// their fallbacks; every tensor allocated at its declared dims (an output in place of an input at
// that input's address); its compulsory bytes, every tensor's bytes once.
std::shared_ptr<const OpProfile> spec_profile(const std::shared_ptr<const SpecProgram>& program, const OpSpec& spec);

}  // namespace metrale::ops
