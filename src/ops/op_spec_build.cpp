// op_spec_build.cpp: build_op: an OpSpec's declaration (roles, levers, arguments) with its run and
// explain over the one compiled program, and its kernels' catalog declarations.
// Invariants: run and explain take the verdict of a role from guard_reason over slots filled by
// fill_slots, nothing else; a forced role runs without its guard (the caller chose it), a forced
// parent's verdict is kForcedKernelReason as the library's ops report it.
#include <fmt/format.h>

#include <limits>

#include "metrale/error.hpp"
#include "ops/op_spec.hpp"
#include "ops/op_spec_program.hpp"

namespace metrale::ops {

// The check (op_spec_check.cpp).
std::vector<CheckResult> spec_check(const std::shared_ptr<const SpecProgram>& program, const OpContext& context,
                                    const CheckOptions& options);

namespace {

// Logs the role's outcome once per slot (GuardTable), the line built only when the slot is new.
void log_outcome(const SpecProgram& program, const CompiledRole& role, const OpKernel& kernel,
                 std::optional<std::string_view> reason, bool requested, OpArgValues values) {
  if (!role.table->claim(reason, requested, role.table->process_slots())) {
    return;
  }
  if (reason) {
    log_verdict_line(fmt::format("{}: {} ({}) is NOT running at {}: {} ({})", program.op, role.role, kernel.kernel,
                                 describe_scalars(program, values), *reason, role.lever_env));
  } else {
    log_verdict_line(fmt::format("{}: {} ({}) runs at {} ({})", program.op, role.role, kernel.kernel,
                                 describe_scalars(program, values), role.lever_env));
  }
}

// The role the caller forced, its kernel checked present first (as the library's ops do: a
// forced kernel the target lacks is refused before the shape); nullptr when none was forced.
const CompiledRole* forced_role(const SpecProgram& program, const OpContext& context, std::string_view forced) {
  if (forced.empty()) {
    return nullptr;
  }
  for (const auto& role : program.roles) {
    if (role->role == forced) {
      const OpKernel& kernel = context.kernels[role->index];
      if (!kernel.handle.present()) {
        throw KernelChoiceError(
            fmt::format("target {} does not ship {} (or it failed to build)", context.target, kernel.kernel));
      }
      return role.get();
    }
  }
  throw KernelChoiceError(fmt::format("{}: no kernel role '{}'", program.op, forced));
}

Pick spec_run(const SpecProgram& program, const OpContext& context, const OpCall& call) {
  const CompiledRole* forced = forced_role(program, context, call.forced_role);
  SpecSlots slots{};
  fill_slots(program, context, call.args, false, slots);
  check_shape_rules(program, call.args, slots);
  GpuBackend& gpu = context.device();
  Pick pick;
  pick.op = program.op;
  pick.forced = forced != nullptr;
  const auto take = [&](const CompiledRole& role) {
    const OpKernel& kernel = context.kernels[role.index];
    pick.role = kernel.role;
    pick.kernel = kernel.kernel;
    pick.handle = kernel.handle;
    launch_role(program, role, gpu, kernel.handle, call.args, slots, call.stream);
    return pick;
  };
  if (forced != nullptr) {
    pick.add_verdict(context.kernels[forced->index].role,
                     forced->index == 0 ? std::optional<std::string_view>(kForcedKernelReason) : std::nullopt);
    return take(*forced);
  }
  std::optional<std::string_view> last;
  for (std::size_t r = 1; r < program.roles.size(); ++r) {
    const CompiledRole& role = *program.roles[r];
    const auto reason = guard_reason(program, role, slots);
    pick.add_verdict(context.kernels[r].role, reason);
    log_outcome(program, role, context.kernels[r], reason, role_requested(role, slots, program), call.args);
    if (!reason) {
      return take(role);
    }
    last = reason;
  }
  if (!context.kernels[0].handle.present()) {
    throw BackendError(fmt::format("{}: no kernel to run: {} is absent{}{}", program.op, context.kernels[0].kernel,
                                   last ? " and the guarded roles refused: " : "", last.value_or("")));
  }
  return take(*program.roles[0]);
}

// The smallest M at which `role` runs at the shape's other values (nullopt with the reason at the
// largest M when it never does); the guard is assumed to only relax as M grows (a floor).
std::pair<std::optional<std::uint32_t>, std::optional<std::string>> smallest_m(const SpecProgram& program,
                                                                               const CompiledRole& role,
                                                                               SpecSlots slots) {
  const std::size_t m = *program.m_slot;
  const auto runs_at = [&](std::int64_t value) {
    slots[m] = value;
    try {
      return !guard_reason(program, role, slots).has_value();
    } catch (const ArgumentError&) {
      return false;  // a rule that cannot be decided there refuses the role there
    }
  };
  std::int64_t hi = static_cast<std::int64_t>(std::min<std::uint64_t>(program.args[m].max, 0x7fffffffU));
  if (!runs_at(hi)) {
    slots[m] = hi;
    std::optional<std::string> why;
    try {
      why = std::string(guard_reason(program, role, slots).value_or(""));
    } catch (const ArgumentError& error) {
      why = error.what();
    }
    return {std::nullopt, why};
  }
  std::int64_t lo = std::max<std::int64_t>(1, static_cast<std::int64_t>(program.args[m].min));
  while (lo < hi) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    if (runs_at(mid)) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return {static_cast<std::uint32_t>(lo), std::nullopt};
}

Explanation spec_explain(const SpecProgram& program, const OpContext& context, const ExplainQuery& query) {
  SpecSlots slots{};
  fill_slots(program, context, query.args, true, slots);
  Explanation out;
  out.op = program.op;
  out.target = std::string(context.target);
  out.sm_count = context.sm_count();
  std::optional<std::size_t> runs;
  for (std::size_t r = 1; r < program.roles.size(); ++r) {
    const CompiledRole& role = *program.roles[r];
    const std::string_view lever = role.lever ? std::string_view(context.op->levers[*role.lever].toml_key) : "";
    RoleExplanation row = explain_role(context, context.kernels[r].role, lever);
    if (program.m_slot) {
      auto [min_m, why] = smallest_m(program, role, slots);
      row.min_m = min_m;
      row.min_reason = std::move(why);
    }
    if (query.m_given || !program.m_slot) {
      const auto reason = guard_reason(program, role, slots);
      row.runs = !reason && !runs;
      if (reason) {
        row.reject = std::string(*reason);
      } else if (!runs) {
        runs = r;
      }
    }
    out.roles.push_back(std::move(row));
  }
  if (query.m_given || !program.m_slot) {
    if (program.m_slot) {
      out.m = static_cast<std::uint32_t>(std::min<std::uint64_t>(query.args[*program.m_slot], UINT32_MAX));
    }
    const std::size_t taken = runs.value_or(0);
    out.kernel = std::string(context.kernels[taken].kernel);
    out.role = std::string(context.kernels[taken].role);
  }
  return out;
}

KernelDeclaration kernel_declaration(const SpecRole& role, const SpecRole& parent, bool is_parent) {
  KernelDeclaration out;
  out.kernel = role.kernel.kernel;
  out.source = role.kernel.source;
  out.expression = role.kernel.expression;
  out.params = role.kernel.params;
  out.twin_of = is_parent || role.tolerance ? std::string() : parent.kernel.kernel;
  out.background = role.kernel.background;
  return out;
}

}  // namespace

BuiltOp build_op(const OpSpec& spec) {
  const std::shared_ptr<const SpecProgram> program = compile_spec(spec);
  BuiltOp built;
  OpDeclaration& op = built.op;
  op.name = spec.name;
  op.aliases = spec.aliases;
  op.summary = spec.summary;
  op.args = spec.args;
  for (std::size_t i = 0; i < spec.roles.size(); ++i) {
    const SpecRole& role = spec.roles[i];
    op.roles.push_back(RoleDecl{role.role, role.kernel.kernel, role.aliases, role.doc, role.lever});
    if (i > 0) {
      op.guards.push_back(GuardDecl{
          role.role, std::vector<std::string>(program->roles[i]->reasons.begin(), program->roles[i]->reasons.end()),
          ""});  // a declared guard's conditions are expressions: none is a tunable M threshold yet
    }
    if (!role.lever.empty()) {
      op.levers.push_back(LeverSpec{role.lever, role.lever_env, false, role.lever_doc});
    }
    built.kernels.push_back(kernel_declaration(role, spec.roles[0], i == 0));
    if (!role.kernel.source_text.empty()) {
      const auto [at, added] = built.sources.emplace(role.kernel.source, role.kernel.source_text);
      if (!added && at->second != role.kernel.source_text) {
        throw ArgumentError(fmt::format("op spec '{}': role '{}': source '{}' is given twice with different text",
                                        spec.name, role.role, role.kernel.source));
      }
    }
  }
  op.run = [program](const OpContext& context, const OpCall& call) { return spec_run(*program, context, call); };
  op.explain = [program](const OpContext& context, const ExplainQuery& query) {
    return spec_explain(*program, context, query);
  };
  op.shape_rules = [program](OpArgValues values) {
    SpecSlots slots{};
    fill_arg_slots(*program, values, slots);
    check_shape_rules(*program, values, slots);
  };
  op.profile = spec_profile(program, spec);
  if (!spec.check_shapes.empty()) {
    op.check = [program](const OpContext& context, const CheckOptions& options) {
      return spec_check(program, context, options);
    };
  }
  check_declaration(op);
  return built;
}

}  // namespace metrale::ops
