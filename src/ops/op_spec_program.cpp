// op_spec_program.cpp: compiling an OpSpec's expressions over its slot table, and the evaluations
// run, explain and the check share (slots, guard verdicts, shape rules, the launch).
#include "ops/op_spec_program.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "metrale/error.hpp"
#include "metrale/gpu/kernel_launch.hpp"
#include "ops/op_checks.hpp"

namespace metrale::ops {
namespace {

constexpr std::array<std::string_view, 4> kRoleSlotNames = {"block", "lanes", "groups", "present"};
constexpr std::array<std::string_view, 3> kAxes = {"x", "y", "z"};

[[noreturn]] void spec_error(std::string_view op, std::string key, std::string_view what) {
  throw SpecError(fmt::format("op spec '{}': {}", op.empty() ? "<unnamed>" : op, what), std::move(key));
}

// Expr::compile, its refusal a SpecError naming the spec's key.
Expr compile_at(std::string_view text, const ExprNames& names, std::string_view where, std::string key) {
  try {
    return Expr::compile(text, names, where);
  } catch (const SpecError&) {
    throw;
  } catch (const ArgumentError& error) {
    throw SpecError(error.what(), std::move(key));
  }
}

std::vector<CompiledRule> compile_rules(const std::vector<SpecRule>& rules, const ExprNames& names,
                                        std::string_view where, std::string_view key) {
  std::vector<CompiledRule> out;
  for (std::size_t i = 0; i < rules.size(); ++i) {
    const std::string at = fmt::format("{} rule {} ('{}')", where, i + 1, rules[i].reason);
    if (rules[i].reason.empty()) {
      throw SpecError(fmt::format("{}: a rule needs a reason", at), fmt::format("{}[{}].reason", key, i));
    }
    out.push_back({rules[i].reason, compile_at(rules[i].holds, names, at, fmt::format("{}[{}].holds", key, i))});
  }
  return out;
}

std::unique_ptr<CompiledRole> compile_role(const OpSpec& spec, const SpecProgram& program, std::size_t index) {
  const SpecRole& role = spec.roles[index];
  const std::string where = fmt::format("op spec '{}': role '{}'", spec.name, role.role);
  const std::string key = fmt::format("roles[{}]", index);
  auto out = std::make_unique<CompiledRole>();
  out->role = role.role;
  out->index = index;
  if (index == 0 && (!role.guard.empty() || !role.lever.empty())) {
    spec_error(spec.name, key + (role.guard.empty() ? ".lever" : ".guard"),
               fmt::format("the parent '{}' has a guard or a lever: it is the kernel that always runs", role.role));
  }
  out->guard = compile_rules(role.guard, program.names, where + ": guard", key + ".guard");
  for (const CompiledRule& rule : out->guard) {
    out->reasons.push_back(rule.reason);
  }
  out->reasons.push_back(kSpecKernelAbsent);
  out->table = std::make_unique<GuardTable>(out->reasons);
  for (std::size_t axis = 0; axis < 3; ++axis) {
    out->grid[axis] = compile_at(role.grid[axis], program.names, fmt::format("{}: grid.{}", where, kAxes[axis]),
                                 fmt::format("{}.grid[{}]", key, axis));
    out->block[axis] = compile_at(role.block[axis], program.names, fmt::format("{}: block.{}", where, kAxes[axis]),
                                  fmt::format("{}.block[{}]", key, axis));
  }
  for (std::size_t i = 0; i < role.kernel_args.size(); ++i) {
    const std::string& text = role.kernel_args[i];
    const auto arg = program.names.find(text);
    if (arg && *arg < program.args.size() && program.args[*arg].tensor()) {
      out->args.push_back({*arg, std::nullopt});
    } else {
      out->args.push_back(
          {std::nullopt, compile_at(text, program.names, fmt::format("{}: kernel argument {}", where, i + 1),
                                    fmt::format("{}.kernel_args[{}]", key, i))});
    }
  }
  if (role.kernel_args.empty()) {
    spec_error(spec.name, key + ".kernel_args", fmt::format("role '{}' names no kernel arguments", role.role));
  }
  out->lever_env =
      role.lever_env.empty() ? LeverSpec{role.lever, "", false, ""}.environment_variable() : role.lever_env;
  out->tolerance = role.tolerance;
  return out;
}

std::int64_t as_slot(std::uint64_t value) {
  return static_cast<std::int64_t>(std::min<std::uint64_t>(value, std::numeric_limits<std::int64_t>::max()));
}

[[noreturn]] void fault_error(const SpecProgram& program, std::string_view what, const Expr& expr, ExprFault fault,
                              OpArgValues values) {
  throw ArgumentError(fmt::format("{}: {} '{}': {} at {}", program.op, what, expr.text(), to_string(fault),
                                  describe_scalars(program, values)));
}

std::uint32_t launch_value(const SpecProgram& program, std::string_view what, const Expr& expr, OpArgValues values,
                           const SpecSlots& slots, std::int64_t min) {
  const ExprResult result = expr.evaluate(slots);
  if (!result.ok()) {
    fault_error(program, what, expr, result.fault, values);
  }
  if (result.value < min || result.value > std::numeric_limits<std::uint32_t>::max()) {
    throw ArgumentError(fmt::format("{}: {} '{}' = {} is outside [{}, 2^32) at {}", program.op, what, expr.text(),
                                    result.value, min, describe_scalars(program, values)));
  }
  return static_cast<std::uint32_t>(result.value);
}

}  // namespace

std::shared_ptr<const SpecProgram> compile_spec(const OpSpec& spec) {
  auto program = std::make_shared<SpecProgram>();
  program->op = spec.name;
  program->args = spec.args;
  program->tensors = detail::DeclaredTensors(program->args);
  if (spec.roles.empty()) {
    spec_error(spec.name, "roles", "an op needs at least its parent role");
  }
  if (spec.roles.size() > kMaxRoles || spec.args.size() > kMaxArgs) {
    spec_error(spec.name, "roles", fmt::format("at most {} roles and {} arguments", kMaxRoles, kMaxArgs));
  }
  const auto add = [&](std::string name, std::string key) {
    if (program->names.find(name)) {
      spec_error(spec.name, std::move(key),
                 fmt::format("the name '{}' is declared twice (arguments, roles' parameters, device properties and "
                             "levers share one table)",
                             name));
    }
    return program->names.add(std::move(name));
  };
  for (std::size_t i = 0; i < spec.args.size(); ++i) {
    const std::size_t slot = add(spec.args[i].name, fmt::format("args[{}].name", i));
    if (spec.args[i].name == "m" && !spec.args[i].tensor()) {
      program->m_slot = slot;
    }
  }
  program->role_slots = program->names.size();
  for (std::size_t r = 0; r < spec.roles.size(); ++r) {
    for (std::string_view field : kRoleSlotNames) {
      add(fmt::format("{}.{}", spec.roles[r].role, field), fmt::format("roles[{}].role", r));
    }
  }
  program->device_slots = add("sm_count", "args");
  add("cc_major", "args");
  add("cc_minor", "args");
  program->lever_slots = program->names.size();
  for (std::size_t r = 0; r < spec.roles.size(); ++r) {
    if (!spec.roles[r].lever.empty()) {
      add(spec.roles[r].lever, fmt::format("roles[{}].lever", r));
      ++program->lever_count;
    }
  }
  // Shape rules, zero_means and dims read the arguments alone: run's validation needs no device,
  // so explain (no device) and run refuse the same shapes.
  ExprNames arg_names;
  for (const ArgDecl& arg : spec.args) {
    arg_names.add(arg.name);
  }
  const std::string where = fmt::format("op spec '{}'", spec.name);
  for (std::size_t i = 0; i < spec.args.size(); ++i) {
    const ArgDecl& arg = spec.args[i];
    program->zero_means.push_back(
        arg.zero_means.empty()
            ? std::nullopt
            : std::optional<Expr>(compile_at(arg.zero_means, arg_names,
                                             fmt::format("{}: argument '{}': zero_means", where, arg.name),
                                             fmt::format("args[{}].zero_means", i))));
    std::vector<Expr> dims;
    for (std::size_t d = 0; d < arg.dims.size(); ++d) {
      dims.push_back(compile_at(arg.dims[d], arg_names, fmt::format("{}: argument '{}': dim", where, arg.name),
                                fmt::format("args[{}].dims[{}]", i, d)));
    }
    program->dims.push_back(std::move(dims));
  }
  program->shape_rules = compile_rules(spec.shape_rules, arg_names, where + ": shape", "shape_rules");
  std::size_t lever = 0;
  for (std::size_t i = 0; i < spec.roles.size(); ++i) {
    program->roles.push_back(compile_role(spec, *program, i));
    if (!spec.roles[i].lever.empty()) {
      program->roles.back()->lever = lever++;
    }
  }
  for (std::size_t c = 0; c < spec.check_shapes.size(); ++c) {
    for (const auto& [name, value] : spec.check_shapes[c]) {
      const auto index = arg_names.find(name);
      if (!index || spec.args[*index].tensor()) {
        spec_error(spec.name, fmt::format("check[{}].{}", c, name),
                   fmt::format("check shape {} names '{}', which is no scalar argument", c + 1, name));
      }
    }
  }
  program->check_shapes = spec.check_shapes;
  return program;
}

void fill_arg_slots(const SpecProgram& program, OpArgValues values, SpecSlots& slots) {
  const std::size_t args = std::min(values.size(), program.args.size());
  for (std::size_t i = 0; i < args; ++i) {
    slots[i] = as_slot(values[i]);
  }
  for (std::size_t i = 0; i < args; ++i) {
    if (program.zero_means[i] && values[i] == 0) {
      const ExprResult result = program.zero_means[i]->evaluate(slots);
      slots[i] = result.ok() ? result.value : 0;
    }
  }
}

void fill_slots(const SpecProgram& program, const OpContext& context, OpArgValues values, bool shipped_counts,
                SpecSlots& slots) {
  fill_arg_slots(program, values, slots);
  for (std::size_t r = 0; r < program.roles.size(); ++r) {
    const OpKernel& kernel = context.kernels[r];
    const std::size_t base = program.role_slots + 4 * r;
    slots[base] = kernel.shipped ? kernel.params.block : 0;
    slots[base + 1] = kernel.shipped ? kernel.params.lanes : 0;
    slots[base + 2] = kernel.shipped ? kernel.params.groups : 0;
    slots[base + 3] = (shipped_counts ? context.handle_or_shipped(kernel) : kernel.handle).present() ? 1 : 0;
  }
  slots[program.device_slots] = context.sm_count();
  std::optional<ComputeCapability> cc = context.compute_capability;
  if (context.gpu != nullptr && context.gpu->compute_capability()) {
    cc = context.gpu->compute_capability();
  }
  slots[program.device_slots + 1] = cc ? cc->major : 0;
  slots[program.device_slots + 2] = cc ? cc->minor : 0;
  std::size_t lever = 0;
  for (const auto& role : program.roles) {
    if (role->lever) {
      const LeverValue* value = context.levers[*role->lever];
      slots[program.lever_slots + lever++] = value != nullptr && value->value ? 1 : 0;
    }
  }
}

std::optional<std::string_view> guard_reason(const SpecProgram& program, const CompiledRole& role,
                                             const SpecSlots& slots) {
  for (const CompiledRule& rule : role.guard) {
    const ExprResult result = rule.holds.evaluate(slots);
    if (!result.ok()) {
      throw ArgumentError(fmt::format("{}: role {}: guard rule '{}' ('{}'): {}", program.op, role.role, rule.reason,
                                      rule.holds.text(), to_string(result.fault)));
    }
    if (result.value == 0) {
      return std::string_view(rule.reason);
    }
  }
  if (slots[program.role_slots + 4 * role.index + 3] == 0) {
    return kSpecKernelAbsent;
  }
  return std::nullopt;
}

bool role_requested(const CompiledRole& role, const SpecSlots& slots, const SpecProgram& program) {
  return !role.lever || slots[program.lever_slots + *role.lever] != 0;
}

void check_shape_rules(const SpecProgram& program, OpArgValues values, const SpecSlots& slots) {
  program.tensors.require(program.op, values);
  for (const CompiledRule& rule : program.shape_rules) {
    const ExprResult result = rule.holds.evaluate(slots);
    if (!result.ok() || result.value == 0) {
      throw ArgumentError(fmt::format("{}: {} ('{}' {} at {})", program.op, rule.reason, rule.holds.text(),
                                      result.ok() ? "does not hold" : to_string(result.fault),
                                      describe_scalars(program, values)));
    }
  }
}

Dim3 role_block(const SpecProgram& program, const CompiledRole& role, OpArgValues values, const SpecSlots& slots) {
  return Dim3{launch_value(program, "block.x", role.block[0], values, slots, 1),
              launch_value(program, "block.y", role.block[1], values, slots, 1),
              launch_value(program, "block.z", role.block[2], values, slots, 1)};
}

void launch_role(const SpecProgram& program, const CompiledRole& role, GpuBackend& gpu, KernelHandle handle,
                 OpArgValues values, const SpecSlots& slots, std::uint64_t stream) {
  const Dim3 grid{launch_value(program, "grid.x", role.grid[0], values, slots, 1),
                  launch_value(program, "grid.y", role.grid[1], values, slots, 1),
                  launch_value(program, "grid.z", role.grid[2], values, slots, 1)};
  KernelLaunch launch(gpu, handle);
  launch.grid(grid).block(role_block(program, role, values, slots));
  for (const CompiledKernelArg& arg : role.args) {
    if (arg.tensor) {
      launch.arg_ptr(DevicePtr{values[*arg.tensor]});
    } else {
      launch.arg_u32(launch_value(program, "kernel argument", *arg.value, values, slots, 0));
    }
  }
  launch.launch(stream);
}

std::string describe_scalars(const SpecProgram& program, OpArgValues values) {
  std::string out;
  for (std::size_t i = 0; i < program.args.size() && i < values.size(); ++i) {
    if (!program.args[i].tensor()) {
      out += fmt::format("{}{}={}", out.empty() ? "" : " ", program.args[i].name, values[i]);
    }
  }
  return out;
}

}  // namespace metrale::ops
