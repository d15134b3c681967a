// op_runtime.cpp: opening the commands' runtimes with the plug-ins' declarations, and finding
// ops and roles by what the user typed.
#include "op_runtime.hpp"

#include <fmt/format.h>

#include "cli_support.hpp"
#include "gpu/cuda_backend.hpp"
#include "hardware/hardware_loader.hpp"
#include "hardware/target_selection.hpp"
#include "op_plugins.hpp"
#include "ops/op_kernels.hpp"

namespace metrale::cli {
KernelCatalog target_catalog(const RuntimeOptions& options) {
  KernelCatalog catalog = ops::library_catalog();
  for (const KernelDeclaration& declaration : options.kernels) {
    catalog.add(declaration);
  }
  for (const ops::OpDeclaration& op : options.ops) {
    for (const LeverSpec& lever : op.levers) {
      catalog.add_lever(lever);
    }
  }
  return catalog;
}

ops::OpSet declared_ops(const RuntimeOptions& options) {
  ops::OpSet declared = ops::library_ops();
  for (const ops::OpDeclaration& op : options.ops) {
    declared.add(op);
  }
  return declared;
}

RuntimeOptions runtime_options(const std::string& target) {
  RuntimeOptions options;
  apply_op_plugins(options);
  if (!target.empty()) {
    const auto targets = load_targets(options.env, target_catalog(options));
    const HardwareTarget& named = require_target(targets, target);
    options.target = target;
    options.host_sm_count = named.sm_count.value_or(kFallbackSmCount);
  }
  return options;
}

std::unique_ptr<Runtime> open_without_device(const std::string& target) {
  RuntimeOptions options = runtime_options(target);
  options.backend = BackendChoice::kNone;
  return Runtime::open(std::move(options));
}

std::unique_ptr<Runtime> open_device_or_host(const std::string& target) {
  return open_device_or_host(runtime_options(target));
}

std::unique_ptr<Runtime> open_device_or_host(RuntimeOptions options) {
  CudaBackendOpen opened = CudaBackend::open(options.device_ordinal);
  if (opened.backend) {
    return Runtime::open_with(std::move(opened.backend), std::move(options));
  }
  options.backend = BackendChoice::kHost;
  return Runtime::open(std::move(options));
}

const ops::OpDeclaration& require_op(const ops::OpSet& ops, std::string_view name) {
  if (const ops::OpDeclaration* op = ops.find(name)) {
    return *op;
  }
  std::vector<std::string> known;
  for (const ops::OpDeclaration& op : ops.ops()) {
    known.push_back(op.aliases.empty() ? op.name : fmt::format("{} ({})", op.name, fmt::join(op.aliases, ", ")));
  }
  throw UsageError(fmt::format("unknown op '{}' (known: {})", name, fmt::join(known, ", ")));
}

std::string op_names_help() {
  std::vector<std::string> known;
  for (const ops::OpDeclaration& op : ops::library_ops().ops()) {
    known.push_back(op.aliases.empty() ? op.name : fmt::format("{} ({})", op.name, fmt::join(op.aliases, ", ")));
  }
  return fmt::format("The op, by name or alias: {}, or one of an --ops plug-in", fmt::join(known, ", "));
}

std::string role_list(const ops::OpDeclaration& op) {
  std::vector<std::string> roles;
  for (const ops::RoleDecl& role : op.roles) {
    roles.push_back(role.aliases.empty() ? role.role
                                         : fmt::format("{} ({})", role.role, fmt::join(role.aliases, ", ")));
  }
  return fmt::format("{}", fmt::join(roles, ", "));
}

std::string_view require_role(const ops::OpDeclaration& op, std::string_view name, std::string_view flag) {
  const auto index = op.role_index(name);
  if (!index) {
    throw UsageError(
        fmt::format("{} {}: {} has no kernel role '{}' (roles: {})", flag, name, op.name, name, role_list(op)));
  }
  return op.roles[*index].role;
}

}  // namespace metrale::cli
