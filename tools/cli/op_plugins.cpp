// op_plugins.cpp: loading `--ops` plug-ins with dlopen and calling their declaration function, and
// `--op-file` TOML op files through ops::build_op_file.
#include "op_plugins.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <map>

#include "cli_support.hpp"
#include "ops/op_spec_toml.hpp"

namespace metrale::cli {
namespace {

using DeclareOps = void (*)(RuntimeOptions&);

std::vector<std::string>& ops_files() {
  static std::vector<std::string> files;
  return files;
}

std::vector<std::string>& op_spec_files() {
  static std::vector<std::string> files;
  return files;
}

// Opened once per path; kept open for the process (the declarations' functions live there).
DeclareOps plugin_function(const std::string& file) {
  static std::map<std::string, DeclareOps> loaded;
  if (const auto found = loaded.find(file); found != loaded.end()) {
    return found->second;
  }
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    throw UsageError(fmt::format("--ops {}: cannot load it: {}", file, why != nullptr ? why : "unknown error"));
  }
  void* symbol = dlsym(handle, kDeclareOpsSymbol);
  if (symbol == nullptr) {
    throw UsageError(fmt::format("--ops {}: exports no function {} (extern \"C\" void {}(metrale::RuntimeOptions&))",
                                 file, kDeclareOpsSymbol, kDeclareOpsSymbol));
  }
  auto function = reinterpret_cast<DeclareOps>(symbol);  // NOLINT: dlsym's documented use
  loaded.emplace(file, function);
  return function;
}

}  // namespace

void add_ops_option(CLI::App* command) {
  command->add_option("--ops", ops_files(),
                      "A plug-in library declaring an engine's ops (exports extern \"C\" void "
                      "metrale_declare_ops(metrale::RuntimeOptions&)); repeatable");
  command->add_option("--op-file", op_spec_files(),
                      "A TOML op file declaring an engine's op as data (its arguments, kernels, guards; "
                      "ARCHITECTURE.md, \"Engine ops as data\"); repeatable");
}

void apply_op_plugins(RuntimeOptions& options) {
  for (const std::string& file : ops_files()) {
    plugin_function(file)(options);
  }
  for (const std::string& file : op_spec_files()) {
    ops::BuiltOp built = ops::build_op_file(file);
    for (auto& [name, text] : built.sources) {
      options.sources[name] = std::move(text);
    }
    for (KernelDeclaration& kernel : built.kernels) {
      options.kernels.push_back(std::move(kernel));
    }
    options.ops.push_back(std::move(built.op));
  }
}

}  // namespace metrale::cli
