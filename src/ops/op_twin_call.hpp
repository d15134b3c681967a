// ops/op_twin_call.hpp: what every op with one guarded twin over a parent shares (the FP8 op, the
// fused SiLU-mul op, the fused add-RMSNorm op): their names and declaration positions, the
// declaration of their roles, guard and lever, what a call asks the op's own pick for (the lever,
// or a forced role), and the generic Pick of the op's typed outcome. explain's side is
// op_explain_twin.hpp.
// Invariants: a forced role whose kernel is not built is a KernelChoiceError naming the target and
// the kernel, raised before anything launches; the verdict on a forced parent is
// kForcedKernelReason, on a forced or chosen twin none, on an unforced parent the guard's reason;
// a declaration built by declare_twin_over_parent holds its roles and lever at the positions its
// TwinOverParent states (checked there, once per build).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "metrale/ops/op_declaration.hpp"
#include "ops/op_positions.hpp"

namespace metrale::ops {

// The op's names (string views of static storage: a Pick keeps them) and the positions in its
// declaration that the per-call path reads its kernels and lever at (op_positions.hpp).
struct TwinOverParent {
  std::string_view op;
  std::string_view parent_kernel;
  std::string_view twin_kernel;
  std::string_view twin_lever;  // its declaration's toml_key
  std::string_view parent_role = "parent";
  std::string_view twin_role = "twin";
  std::size_t parent_at = 0;
  std::size_t twin_at = 1;
  std::size_t twin_lever_at = 0;
};

// What such a declaration says beyond its names: its roles' aliases and docs, any roles between
// the parent and the twin (the SiLU-mul op's quant step), the twin's guard and its lever.
struct TwinOverParentRoles {
  std::vector<std::string> parent_aliases{};
  std::string parent_doc{};
  std::vector<std::string> twin_aliases{};
  std::string twin_doc{};
  std::vector<RoleDecl> between{};
  std::vector<std::string> twin_reasons{};  // the twin guard's table, in order
  std::string tuned_reason{};               // the reason of its M threshold (empty: none to tune)
  std::string lever_env{};
  bool lever_required_in_file = false;  // LeverSpec::required_in_file
  std::string lever_doc{};
};

// Sets op.name, op.roles, op.guards and op.levers, then checks that they stand at the positions
// `names` states (std::logic_error naming the op, the position and both names).
void declare_twin_over_parent(OpDeclaration& op, const TwinOverParent& names, TwinOverParentRoles roles);

// Whether `forced_role` (a resolved role name, not empty) is the twin; KernelChoiceError naming
// context.target and the kernel when that role's kernel is not built.
bool force_twin(const OpContext& context, const TwinOverParent& names, std::string_view forced_role, bool parent_built,
                bool twin_built);

// The twin lever's answer for a call: the lever at names.twin_lever_at when no role is forced;
// else whether the forced role is the twin (force_twin), with the other kernel blanked so the
// op's own pick takes the forced one (its grid, block and validation stay the op's). Inline: the
// unforced branch is on every call's path.
inline bool twin_requested(const OpContext& context, const TwinOverParent& names, std::string_view forced_role,
                           bool parent_built, KernelHandle& parent, KernelHandle& twin) {
  if (forced_role.empty()) {
    return lever_at(context, names.twin_lever_at);
  }
  const bool forced_twin = force_twin(context, names, forced_role, parent_built, twin.present());
  (forced_twin ? parent : twin) = KernelHandle{};
  return forced_twin;
}

// The generic Pick of a typed outcome: the twin ran (twin_ran) or the parent, with handle `ran`;
// `twin_reject` is the twin guard's reason when the parent ran unforced.
Pick twin_over_parent_pick(const TwinOverParent& names, bool twin_ran, KernelHandle ran,
                           std::optional<std::string_view> twin_reject, bool forced);

}  // namespace metrale::ops
