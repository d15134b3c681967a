// op_explain_twin.cpp: explain for a twin over a parent with an M floor.
#include "ops/op_explain_twin.hpp"

#include <string>
#include <utility>

namespace metrale::ops {

Explanation explain_twin_over_parent(const OpContext& context, const ExplainQuery& query, std::uint32_t m,
                                     const TwinExplainSpec& spec) {
  RoleExplanation twin = explain_role(context, spec.names.twin_role, spec.names.twin_lever);
  // Refused even at the floor: the twin never runs at this shape, whatever M.
  const auto never = spec.reject_at(twin.requested, spec.min_m);
  twin.min_m = never ? std::nullopt : std::optional<std::uint32_t>(spec.min_m);
  if (never) {
    twin.min_reason = std::string(*never);
  }
  Explanation out;
  out.op = context.op->name;
  out.target = std::string(context.target);
  out.sm_count = context.sm_count();
  if (query.m_given) {
    out.m = m;
    const auto reject = spec.reject_at(twin.requested, m);
    out.kernel = std::string(context.kernel(reject ? spec.names.parent_role : spec.names.twin_role).kernel);
    out.role = std::string(reject ? spec.names.parent_role : spec.names.twin_role);
    twin.runs = !reject;
    if (reject) {
      twin.reject = std::string(*reject);
    }
  }
  out.roles = {std::move(twin)};
  return out;
}

}  // namespace metrale::ops
