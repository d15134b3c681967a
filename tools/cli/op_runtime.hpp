// op_runtime.hpp: the runtime a command serves ops from, written against the op declarations
// alone: the options with the --ops plug-ins applied, the target named on the command line
// checked first (against the library's and the plug-ins' kernels and levers), an op found by
// name or alias, a role by name or alias, and the CUDA device or else the host backend.
// Invariants: this file (like all of tools/cli) names no op and no kernel; an unknown op or role
// is a UsageError listing the known ones; a forced role the target did not build is a UsageError
// (exit 2), never a silent fallback.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "metrale/ops/op_declaration.hpp"
#include "metrale/runtime.hpp"
#include "metrale/target/hardware_target.hpp"

namespace metrale::cli {

// Runtime options with the plug-ins' sources, kernels and ops; `target` empty keeps the default.
// A target no HARDWARE.toml names is a UsageError "--target X: no such target (known: ...)".
RuntimeOptions runtime_options(const std::string& target);

// The catalog Runtime::open checks target files against: the library's kernels and levers, the
// plug-ins' kernels (in `options`) and their ops' levers.
KernelCatalog target_catalog(const RuntimeOptions& options);

// The ops a runtime opened with `options` serves (the library's, then the plug-ins'), without
// opening one: for checking a command line before anything is read or built.
ops::OpSet declared_ops(const RuntimeOptions& options);

// A runtime with no device on `target` (explain: it answers for the target's shipped kernels).
std::unique_ptr<Runtime> open_without_device(const std::string& target);

// The CUDA device when there is one, else the host backend (with the target's SM count, so the
// guards decide as on that target). `target` empty: the device's target, else the default.
std::unique_ptr<Runtime> open_device_or_host(const std::string& target);
// The same with options the command made (runtime_options(target) and its own settings).
std::unique_ptr<Runtime> open_device_or_host(RuntimeOptions options);

// The op called `name` (its name or an alias), or a UsageError "unknown op ... (known: ...)".
const ops::OpDeclaration& require_op(const ops::OpSet& ops, std::string_view name);

// The role `name` (a role or an alias) resolved to its role name, or a UsageError naming the
// op's roles; `flag` is what the user typed it with ("--kernel").
std::string_view require_role(const ops::OpDeclaration& op, std::string_view name, std::string_view flag);

// "The op: ssm_ba_gates (ba-gates), ..." from the library's declarations (a plug-in's ops are
// not loaded when the help is made).
std::string op_names_help();

// "parent, twin, tensor_core (mma)".
std::string role_list(const ops::OpDeclaration& op);

}  // namespace metrale::cli
