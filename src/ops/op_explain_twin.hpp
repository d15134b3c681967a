// ops/op_explain_twin.hpp: explain's answer for an op whose one guarded role is a twin over a
// parent, with a floor on M (the FP8 op, the fused SiLU-mul op; the add-RMSNorm twin's is 1): the twin's row with the
// smallest M its guard takes (or why it never runs at this shape), and at a given M what runs and
// why. Invariant: the answer at M is the guard's own verdict at M (reject_at), so explain and an
// op call cannot disagree.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

#include "metrale/ops/op_declaration.hpp"
#include "ops/op_twin_call.hpp"
#include "ops/op_verdict.hpp"

namespace metrale::ops {

// The op's name and the roles' kernels come from the context's declaration.
struct TwinExplainSpec {
  TwinOverParent names;     // the roles and the twin's lever
  std::uint32_t min_m = 0;  // the smallest M the twin's floor lets through at this shape
  // The twin's guard at M with the lever's value: nullopt when the twin runs, else the reason.
  std::function<std::optional<std::string_view>(bool requested, std::uint32_t m)> reject_at;
};

// The explanation at the query's M (`m`, when query.m_given), else the smallest M alone.
Explanation explain_twin_over_parent(const OpContext& context, const ExplainQuery& query, std::uint32_t m,
                                     const TwinExplainSpec& spec);

// The same for a twin whose guard has an M floor that a tuning table may set (the FP8 op and the
// fused SiLU-mul op): the table's row where there is one, else predicted_min_m(k, sm_count,
// twin groups); `pick(requested, kernels, m, k, sm_count)` is the call's own guard.
template <typename Kernels, typename PredictMinM, typename PickAt>
Explanation explain_tuned_twin(const OpContext& context, const ExplainQuery& query, const TwinOverParent& names,
                               Kernels kernels, std::uint32_t m, std::uint32_t k, PredictMinM predicted_min_m,
                               PickAt pick) {
  kernels.twin_tuned_min_m = tuned_threshold(context, names.twin_role, 0, k);
  const std::uint32_t sm_count = context.sm_count();
  const TwinExplainSpec spec{
      .names = names,
      .min_m = kernels.twin_tuned_min_m.value_or(predicted_min_m(k, sm_count, kernels.twin_params.groups)),
      .reject_at = [&](bool requested, std::uint32_t at) { return pick(requested, kernels, at, k, sm_count).reject; }};
  return explain_twin_over_parent(context, query, m, spec);
}

}  // namespace metrale::ops
