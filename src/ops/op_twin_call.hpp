// ops/op_twin_call.hpp: the call side that every op with one guarded twin over a parent shares
// (the FP8 op, the fused SiLU-mul op, the fused add-RMSNorm op): what a forced role asks the op's
// own pick for, and the generic Pick of the op's typed outcome. explain's side is
// op_explain_twin.hpp.
// Invariants: a forced role whose kernel is not built is a KernelChoiceError naming the target and
// the kernel, raised before anything launches; the verdict on a forced parent is
// kForcedKernelReason, on a forced or chosen twin none, on an unforced parent the guard's reason.
#pragma once

#include <optional>
#include <string_view>

#include "metrale/ops/op_declaration.hpp"

namespace metrale::ops {

// The op's names; string views of static storage (a Pick keeps them).
struct TwinOverParent {
  std::string_view op;
  std::string_view parent_role;
  std::string_view twin_role;
  std::string_view parent_kernel;
  std::string_view twin_kernel;
};

// Whether `forced_role` (a resolved role name, not empty) is the twin; KernelChoiceError naming
// context.target and the kernel when that role's kernel is not built. The caller then blanks the
// other kernel and lets its pick run with the lever set to the answer, so the grid, block and
// validation stay the op's.
bool force_twin(const OpContext& context, const TwinOverParent& names, std::string_view forced_role, bool parent_built,
                bool twin_built);

// The generic Pick of a typed outcome: the twin ran (twin_ran) or the parent, with handle `ran`;
// `twin_reject` is the twin guard's reason when the parent ran unforced.
Pick twin_over_parent_pick(const TwinOverParent& names, bool twin_ran, KernelHandle ran,
                           std::optional<std::string_view> twin_reject, bool forced);

}  // namespace metrale::ops
