// op_declaration.cpp: the checks every op declaration passes, the pick's verdict list, the op
// context's lookups and a role found by name or alias (calls: op_call.cpp; binding: op_arg_binding.cpp).
#include "metrale/ops/op_declaration.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <set>

#include "metrale/error.hpp"
#include "metrale/ops/tuning_table.hpp"
#include "ops/op_verdict.hpp"

namespace metrale::ops {
namespace {

std::string role_list(const OpDeclaration& op) {
  std::string names;
  for (const RoleDecl& role : op.roles) {
    names += (names.empty() ? "" : ", ") + role.role;
    for (const std::string& alias : role.aliases) {
      names += fmt::format(" ({})", alias);
    }
  }
  return names;
}

[[noreturn]] void declaration_error(const OpDeclaration& op, std::string_view rule) {
  throw ArgumentError(fmt::format("op declaration '{}': {}", op.name.empty() ? "<unnamed>" : op.name, rule));
}

// A dim names a scalar, is a number, or is "scalar/N" with N a positive number.
bool dim_is_valid(const OpDeclaration& op, std::string_view dim) {
  const auto is_number = [](std::string_view text) {
    return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  const auto names_scalar = [&](std::string_view name) {
    const auto index = op.arg_index(name);
    return index && !op.args[*index].tensor();
  };
  if (is_number(dim)) {
    return true;
  }
  const auto slash = dim.find('/');
  if (slash == std::string_view::npos) {
    return names_scalar(dim);
  }
  const std::string_view divisor = dim.substr(slash + 1);
  return names_scalar(dim.substr(0, slash)) && is_number(divisor) && divisor.find_first_not_of('0') != divisor.npos;
}

// A column-major tensor: two dims, a [0, 1] selector scalar and a stride scalar, both declared;
// multiple_of only on scalars.
void validate_layout(const OpDeclaration& op, const ArgDecl& arg) {
  if (arg.multiple_of > 1 && arg.tensor()) {
    declaration_error(op, fmt::format("tensor '{}': multiple_of is a scalar's rule", arg.name));
  }
  if (arg.layout_by.empty() && arg.column_stride.empty()) {
    return;
  }
  const auto scalar = [&](const std::string& name) -> const ArgDecl* {
    const auto index = op.arg_index(name);
    return index && !op.args[*index].tensor() ? &op.args[*index] : nullptr;
  };
  const ArgDecl* selector = scalar(arg.layout_by);
  if (!arg.tensor() || arg.dims.size() != 2 || selector == nullptr || selector->max > 1 ||
      scalar(arg.column_stride) == nullptr) {
    declaration_error(op, fmt::format("argument '{}': layout_by '{}' and column_stride '{}' need a 2-D tensor, a "
                                      "scalar in [0, 1] and a scalar stride",
                                      arg.name, arg.layout_by, arg.column_stride));
  }
}

}  // namespace

std::string_view to_string(DType dtype) {
  switch (dtype) {
    case DType::kBf16:
      return "bf16";
    case DType::kFp32:
      return "fp32";
    case DType::kE4m3:
      return "e4m3";
    case DType::kU8:
      return "u8";
    case DType::kU16:
      return "u16";
    case DType::kI32:
      return "i32";
    case DType::kU32:
      return "u32";
  }
  return "unknown";
}

std::uint32_t dtype_bytes(DType dtype) {
  switch (dtype) {
    case DType::kE4m3:
    case DType::kU8:
      return 1;
    case DType::kBf16:
    case DType::kU16:
      return 2;
    case DType::kFp32:
    case DType::kI32:
    case DType::kU32:
      return 4;
  }
  return 1;
}

std::string_view to_string(ArgKind kind) {
  switch (kind) {
    case ArgKind::kInput:
      return "input";
    case ArgKind::kOutput:
      return "output";
    case ArgKind::kScalar:
      return "scalar";
  }
  return "unknown";
}

std::string_view to_string(CheckVerdict verdict) {
  switch (verdict) {
    case CheckVerdict::kPassed:
      return "passed";
    case CheckVerdict::kFailed:
      return "failed";
    case CheckVerdict::kSkipped:
      return "skipped";
  }
  return "unknown";
}

void Pick::add_verdict(std::string_view verdict_role, std::optional<std::string_view> reason) {
  if (verdict_count < verdicts.size()) {
    verdicts[verdict_count++] = Verdict{verdict_role, reason};
  }
}

const Verdict* Pick::verdict(std::string_view verdict_role) const {
  for (const Verdict& v : ordered_verdicts()) {
    if (v.role == verdict_role) {
      return &v;
    }
  }
  return nullptr;
}

const OpKernel& OpContext::kernel(std::string_view role) const {
  if (op != nullptr) {
    if (const auto index = op->role_index(role)) {
      return kernels[*index];
    }
  }
  throw ArgumentError(fmt::format("op {} has no kernel role '{}' (roles: {})", op != nullptr ? op->name : "<none>",
                                  role, op != nullptr ? role_list(*op) : ""));
}

const LeverValue* OpContext::lever_value(std::string_view toml_key) const {
  if (op == nullptr) {
    return nullptr;
  }
  const auto index = op->lever_index(toml_key);
  return index ? levers[*index] : nullptr;
}

bool OpContext::lever(std::string_view toml_key) const {
  const LeverValue* value = lever_value(toml_key);
  return value != nullptr && value->value;
}

GpuBackend& OpContext::device() const {
  if (gpu == nullptr) {
    throw BackendError(fmt::format("no device: {}", no_device_reason));
  }
  return *gpu;
}

KernelHandle OpContext::handle_or_shipped(const OpKernel& kernel) const {
  if (gpu != nullptr) {
    return kernel.handle;
  }
  return KernelHandle{kernel.shipped ? 1U : 0U};
}

std::uint32_t OpContext::sm_count() const {
  return gpu != nullptr ? device_sm_count(*gpu, fallback_sm_count) : std::max<std::uint32_t>(fallback_sm_count, 1);
}

std::optional<std::uint32_t> OpContext::tuned_min_m(std::string_view role, std::uint32_t n, std::uint32_t k) const {
  if (tuning == nullptr || op == nullptr) {
    return std::nullopt;
  }
  const TuningRow* row = tuning->find(op->name, role, n, k);
  if (row == nullptr) {
    return std::nullopt;
  }
  return row->min_m.value_or(std::numeric_limits<std::uint32_t>::max());
}

ArgDecl tensor_arg(std::string name, ArgKind kind, DType dtype, std::uint32_t alignment, std::vector<std::string> dims,
                   std::string doc) {
  ArgDecl arg;
  arg.name = std::move(name);
  arg.kind = kind;
  arg.dtype = dtype;
  arg.alignment = alignment;
  arg.dims = std::move(dims);
  arg.doc = std::move(doc);
  return arg;
}

ArgDecl scalar_arg(std::string name, std::optional<std::uint64_t> fallback, std::uint64_t max, std::string doc) {
  ArgDecl arg;
  arg.name = std::move(name);
  arg.max = max;
  arg.fallback = fallback;
  arg.doc = std::move(doc);
  return arg;
}

RoleExplanation explain_role(const OpContext& context, std::string_view role, std::string_view lever) {
  RoleExplanation row;
  const OpKernel& kernel = context.kernel(role);
  row.role = std::string(role);
  row.kernel = std::string(kernel.kernel);
  row.present = context.handle_or_shipped(kernel).present();
  row.lever = std::string(lever);
  if (const LeverValue* value = context.lever_value(lever)) {
    row.requested = value->value;
    row.lever_origin = fmt::format("{}: {}", to_string(value->provenance), value->origin);
  }
  return row;
}

const GuardDecl* OpDeclaration::guard(std::string_view role) const {
  for (const GuardDecl& decl : guards) {
    if (decl.role == role) {
      return &decl;
    }
  }
  return nullptr;
}

std::optional<std::size_t> OpDeclaration::arg_index(std::string_view arg) const {
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i].name == arg) {
      return i;
    }
  }
  return std::nullopt;
}

std::optional<std::size_t> OpDeclaration::role_index(std::string_view role_or_alias) const {
  // Role names first (what every launch asks by), aliases after: check_declaration keeps names and
  // aliases distinct, so the order changes no answer, only what a launch pays.
  for (std::size_t i = 0; i < roles.size(); ++i) {
    if (roles[i].role == role_or_alias) {
      return i;
    }
  }
  for (std::size_t i = 0; i < roles.size(); ++i) {
    const RoleDecl& role = roles[i];
    if (std::find(role.aliases.begin(), role.aliases.end(), role_or_alias) != role.aliases.end()) {
      return i;
    }
  }
  return std::nullopt;
}

std::optional<std::size_t> OpDeclaration::lever_index(std::string_view toml_key) const {
  for (std::size_t i = 0; i < levers.size(); ++i) {
    if (levers[i].toml_key == toml_key) {
      return i;
    }
  }
  return std::nullopt;
}

bool OpDeclaration::answers_to(std::string_view wanted) const {
  return name == wanted || std::find(aliases.begin(), aliases.end(), wanted) != aliases.end();
}

void check_declaration(const OpDeclaration& op) {
  if (op.name.empty()) {
    declaration_error(op, "the op needs a name");
  }
  if (op.roles.empty() || op.roles.size() > kMaxRoles) {
    declaration_error(op, fmt::format("{} kernel roles: an op has 1 to {}", op.roles.size(), kMaxRoles));
  }
  if (op.levers.size() > kMaxLevers) {
    declaration_error(op, fmt::format("{} levers: an op has at most {}", op.levers.size(), kMaxLevers));
  }
  if (op.args.size() > kMaxArgs) {
    declaration_error(op, fmt::format("{} arguments: an op has at most {}", op.args.size(), kMaxArgs));
  }
  if (!op.run) {
    declaration_error(op, "the op has no run function");
  }
  std::set<std::string_view> roles;
  for (const RoleDecl& role : op.roles) {
    if (role.role.empty() || role.kernel.empty()) {
      declaration_error(op, "a kernel role needs a role name and a kernel");
    }
    if (!roles.insert(role.role).second) {
      declaration_error(op, fmt::format("role '{}' is declared twice", role.role));
    }
    for (const std::string& alias : role.aliases) {
      if (!roles.insert(alias).second) {
        declaration_error(op, fmt::format("role alias '{}' names another role", alias));
      }
    }
  }
  std::set<std::string_view> guarded;
  for (const GuardDecl& guard : op.guards) {
    if (!op.role_index(guard.role) || !guarded.insert(guard.role).second) {
      declaration_error(op, fmt::format("guard of role '{}': no such role, or a second guard for it", guard.role));
    }
    // Each reason is a log slot of its own: two equal reasons would share one.
    std::set<std::string_view> reasons;
    for (const std::string& reason : guard.reasons) {
      if (reason.empty() || !reasons.insert(reason).second) {
        declaration_error(op, fmt::format("role '{}': guard reason '{}' is empty or listed twice", guard.role, reason));
      }
    }
    if (!guard.tuned_reason.empty() && !reasons.contains(guard.tuned_reason)) {
      declaration_error(op, fmt::format("role '{}': the tuned reason '{}' is not one of its guard's reasons",
                                        guard.role, guard.tuned_reason));
    }
  }
  std::set<std::string_view> args;
  for (const ArgDecl& arg : op.args) {
    if (arg.name.empty() || !args.insert(arg.name).second) {
      declaration_error(op, fmt::format("argument '{}' is empty or declared twice", arg.name));
    }
    if (!arg.tensor() &&
        (arg.min > arg.max || (arg.fallback && (*arg.fallback < arg.min || *arg.fallback > arg.max)))) {
      declaration_error(op, fmt::format("scalar '{}': its range [{}, {}] or its fallback is inconsistent", arg.name,
                                        arg.min, arg.max));
    }
  }
  for (const ShapeConstantDecl& shape : op.shape_constants) {
    const auto arg = op.arg_index(shape.arg);
    if (!op.role_index(shape.role) || !arg || op.args[*arg].tensor() || !shape.rule) {
      declaration_error(op, fmt::format("shape constant '{}' of role '{}': it needs a declared role, a scalar "
                                        "argument and a rule",
                                        shape.arg, shape.role));
    }
  }
  for (const ArgDecl& arg : op.args) {
    if (!arg.zero_means.empty() && !dim_is_valid(op, arg.zero_means)) {
      declaration_error(op,
                        fmt::format("scalar '{}': zero_means '{}' names no scalar argument", arg.name, arg.zero_means));
    }
    if (!arg.in_place_of.empty()) {
      const auto input = op.arg_index(arg.in_place_of);
      if (arg.kind != ArgKind::kOutput || !input || op.args[*input].kind != ArgKind::kInput) {
        declaration_error(op, fmt::format("argument '{}': in_place_of '{}' needs an output naming an input tensor",
                                          arg.name, arg.in_place_of));
      }
    }
    validate_layout(op, arg);
    for (const std::string& dim : arg.dims) {
      if (!dim_is_valid(op, dim)) {
        declaration_error(op, fmt::format("tensor '{}': dim '{}' names no scalar argument (a scalar, a number or "
                                          "scalar/N)",
                                          arg.name, dim));
      }
    }
  }
}

std::string_view resolve_role(const OpDeclaration& op, std::string_view role_or_alias, std::string_view hint) {
  if (role_or_alias.empty()) {
    return {};
  }
  const auto index = op.role_index(role_or_alias);
  if (!index) {
    throw KernelChoiceError(
        fmt::format("{}: no kernel role '{}' (roles: {}){}", op.name, role_or_alias, role_list(op), hint));
  }
  return op.roles[*index].role;
}

}  // namespace metrale::ops
