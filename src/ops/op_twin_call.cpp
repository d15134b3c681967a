// ops/op_twin_call.cpp: a twin-over-parent op's declaration, a forced role's check and its generic Pick.
#include "ops/op_twin_call.hpp"

#include <fmt/format.h>

#include <utility>

#include "metrale/error.hpp"

namespace metrale::ops {

void declare_twin_over_parent(OpDeclaration& op, const TwinOverParent& names, TwinOverParentRoles roles) {
  const std::string twin_role(names.twin_role);
  const std::string twin_lever(names.twin_lever);
  op.name = std::string(names.op);
  op.roles = {RoleDecl{std::string(names.parent_role), std::string(names.parent_kernel),
                       std::move(roles.parent_aliases), std::move(roles.parent_doc), ""}};
  for (RoleDecl& role : roles.between) {
    op.roles.push_back(std::move(role));
  }
  op.roles.push_back(RoleDecl{twin_role, std::string(names.twin_kernel), std::move(roles.twin_aliases),
                              std::move(roles.twin_doc), twin_lever});
  op.guards = {GuardDecl{twin_role, std::move(roles.twin_reasons), std::move(roles.tuned_reason)}};
  op.levers = {
      LeverSpec{twin_lever, std::move(roles.lever_env), roles.lever_required_in_file, std::move(roles.lever_doc)}};
  require_role_at(op, names.parent_at, names.parent_role);
  require_role_at(op, names.twin_at, names.twin_role);
  require_lever_at(op, names.twin_lever_at, names.twin_lever);
}

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
