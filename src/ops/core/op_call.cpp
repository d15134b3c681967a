// op_call.cpp: one op call and one explain as every surface makes them: the forced role resolved,
// the values counted and checked for aliasing, a verification refusal named in the verdicts; explain
// holds a complete shape against run's own shape rules first, so the two never disagree.
#include <fmt/format.h>

#include <array>

#include "metrale/error.hpp"
#include "metrale/ops/op_declaration.hpp"
#include "ops/core/op_arg_binding.hpp"

namespace metrale::ops {

Pick run_op(const OpContext& context, const OpCall& call) {
  if (context.op == nullptr) {
    throw ArgumentError("an op call without an op");
  }
  const OpDeclaration& op = *context.op;
  OpCall resolved = call;
  resolved.forced_role = resolve_role(op, call.forced_role);
  check_value_count(op, call.args.size());
  check_no_aliasing(op, call.args);
  if (!resolved.forced_role.empty()) {
    const OpKernel& forced = context.kernel(resolved.forced_role);
    if (!forced.refusal.empty()) {
      throw KernelChoiceError(fmt::format("{}: the {} kernel {} was refused by verification: {}", op.name, forced.role,
                                          forced.kernel, forced.refusal));
    }
  }
  Pick pick = op.run(context, resolved);
  for (std::size_t r = 0; r < op.roles.size(); ++r) {
    if (context.kernels[r].role == pick.role && context.kernels[r].handle == pick.handle) {
      pick.shape = context.kernels[r].params.shape;
    }
  }
  // A refused kernel reads as absent to the guards; its refusal is the better reason to report.
  for (std::size_t i = 0; i < pick.verdict_count; ++i) {
    Verdict& verdict = pick.verdicts[i];
    for (std::size_t r = 0; verdict.reason && r < op.roles.size(); ++r) {
      if (context.kernels[r].role == verdict.role && !context.kernels[r].refusal.empty()) {
        verdict.reason = context.kernels[r].refusal;
      }
    }
  }
  return pick;
}

Explanation explain_op(const OpContext& context, const ExplainQuery& query) {
  if (context.op == nullptr) {
    throw ArgumentError("an explain without an op");
  }
  const OpDeclaration& op = *context.op;
  if (!op.explain) {
    throw ArgumentError(fmt::format("op {} has nothing to explain (its declaration has no explain)", op.name));
  }
  check_value_count(op, query.args.size());
  bool complete = true;
  for (std::size_t i = 0; i < op.args.size() && i < kMaxArgs; ++i) {
    const ArgDecl& arg = op.args[i];
    if (!arg.tensor() && !arg.fallback && arg.name != "m" && (query.given & (std::uint64_t{1} << i)) == 0) {
      complete = false;  // a required size left out: nothing to hold run's rules against
    }
  }
  if (op.shape_rules && complete) {
    // A shape names no memory: each tensor a stand-in address run's pointer rules accept (aligned,
    // far apart, so no two overlap); a left-out optional tensor stays left out.
    std::array<std::uint64_t, kMaxArgs> values{};
    for (std::size_t i = 0; i < op.args.size(); ++i) {
      const ArgDecl& arg = op.args[i];
      values[i] = !arg.tensor() ? query.args[i] : arg.optional ? 0 : (std::uint64_t{i} + 1) << 40;
    }
    if (const auto m = op.arg_index("m"); m && !query.m_given && values[*m] == 0) {
      values[*m] = 1;  // every M is asked: the rules are checked at the smallest
    }
    op.shape_rules(OpArgValues(values.data(), op.args.size()));
  }
  return op.explain(context, query);
}

}  // namespace metrale::ops
