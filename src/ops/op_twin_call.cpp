// ops/op_twin_call.cpp: a forced role's check and the generic Pick of a twin-over-parent op.
#include "ops/op_twin_call.hpp"

#include <fmt/format.h>

#include "metrale/error.hpp"

namespace metrale::ops {

bool force_twin(const OpContext& context, const TwinOverParent& names, std::string_view forced_role, bool parent_built,
                bool twin_built) {
  const bool twin = forced_role == names.twin_role;
  if (!(twin ? twin_built : parent_built)) {
    throw KernelChoiceError(fmt::format("target {} does not ship {} (or it failed to build)", context.target,
                                        twin ? names.twin_kernel : names.parent_kernel));
  }
  return twin;
}

Pick twin_over_parent_pick(const TwinOverParent& names, bool twin_ran, KernelHandle ran,
                           std::optional<std::string_view> twin_reject, bool forced) {
  Pick pick;
  pick.op = names.op;
  pick.forced = forced;
  pick.handle = ran;
  pick.role = twin_ran ? names.twin_role : names.parent_role;
  pick.kernel = twin_ran ? names.twin_kernel : names.parent_kernel;
  std::optional<std::string_view> reason;
  if (!twin_ran) {
    reason = forced ? std::optional<std::string_view>(kForcedKernelReason) : twin_reject;
  }
  pick.add_verdict(forced ? pick.role : names.twin_role, reason);
  return pick;
}

}  // namespace metrale::ops
