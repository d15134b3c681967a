// ops/op_explain_twin.hpp: explain's answer for an op whose one guarded role is a twin over a
// parent, with a floor on M (the FP8 op and the fused SiLU-mul op): the twin's row with the
// smallest M its guard takes (or why it never runs at this shape), and at a given M what runs and
// why. Invariant: the answer at M is the guard's own verdict at M (reject_at), so explain and an
// op call cannot disagree.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

#include "metrale/ops/op_declaration.hpp"

namespace metrale::ops {

// The op's name and the roles' kernels come from the context's declaration.
struct TwinExplainSpec {
  std::string_view parent_role;
  std::string_view twin_role;
  std::string_view twin_lever;
  std::uint32_t min_m = 0;  // the smallest M the twin's floor lets through at this shape
  // The twin's guard at M with the lever's value: nullopt when the twin runs, else the reason.
  std::function<std::optional<std::string_view>(bool requested, std::uint32_t m)> reject_at;
};

// The explanation at the query's M (`m`, when query.m_given), else the smallest M alone.
Explanation explain_twin_over_parent(const OpContext& context, const ExplainQuery& query, std::uint32_t m,
                                     const TwinExplainSpec& spec);

}  // namespace metrale::ops
