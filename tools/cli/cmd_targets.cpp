// cmd_targets.cpp: `metrale-jit targets [--json] [--ops FILE]`: every target with its compute
// capability, arch, SM count, shipped kernels and the resolved levers every declared op reads
// (value and provenance; a plug-in's ops' levers too). --json also names, per kernel, the
// template file and name expression the registry compiles and, per target with an arch, the
// NVRTC options it compiles with: tools/bench/nvrtc_by_hand.cpp reads them, so the hand-driven
// NVRTC bench compiles exactly what `build` does.
// Generic's device-derived values print as "any" / "device", since no device is chosen here.
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "command.hpp"
#include "hardware/hardware_loader.hpp"
#include "jit/nvrtc_compiler.hpp"
#include "metrale/target/levers.hpp"
#include "op_plugins.hpp"
#include "op_runtime.hpp"
#include "ops/op_kernels.hpp"

namespace metrale::cli {
namespace {

std::string cc_text(const HardwareTarget& target) {
  return target.compute_capability ? target.compute_capability->str() : "any";
}
std::string arch_text(const HardwareTarget& target) { return target.arch.empty() ? "device" : target.arch; }
std::string sm_count_text(const HardwareTarget& target) {
  return target.sm_count ? std::to_string(*target.sm_count) : "device";
}

nlohmann::json target_json(const HardwareTarget& target, const Levers& levers, const KernelCatalog& catalog) {
  nlohmann::json kernels = nlohmann::json::array();
  for (const auto& kernel : target.kernels) {
    const KernelVariant variant = ops::target_kernel_variant(target, kernel, catalog);
    kernels.push_back({{"name", kernel.name},
                       {"tag", kernel.params.tag()},
                       {"block", kernel.params.block},
                       {"lanes", kernel.params.lanes},
                       {"groups", kernel.params.groups},
                       {"source", variant.source},
                       {"expression", variant.name_expression}});
  }
  // The registry's options for the target's arch, without include folders (the templates need
  // none; a source that includes the toolkit's headers gets them at build time).
  const nlohmann::json nvrtc =
      target.arch.empty() ? nlohmann::json(nullptr) : nlohmann::json(nvrtc_options(target.arch, {}, {}));
  nlohmann::json lever_json = nlohmann::json::object();
  for (const Levers::Entry& entry : levers.entries()) {
    const LeverValue& lever = entry.value;
    lever_json[entry.spec.toml_key] = {{"value", lever.value},
                                       {"provenance", std::string(to_string(lever.provenance))},
                                       {"origin", lever.origin},
                                       {"env", entry.spec.environment_variable()}};
  }
  return {{"name", target.name},
          {"source", target.source},
          {"compute_capability", cc_text(target)},
          {"arch", target.arch.empty() ? nlohmann::json(nullptr) : nlohmann::json(target.arch)},
          {"sm_count", target.sm_count ? nlohmann::json(*target.sm_count) : nlohmann::json(nullptr)},
          {"kernels", kernels},
          {"nvrtc_options", nvrtc},
          {"levers", lever_json}};
}

std::string target_text(const HardwareTarget& target, const Levers& levers) {
  std::string out = fmt::format("{}  ({})\n", target.name, target.source);
  out += fmt::format("  {:<26}{}\n", "compute capability", cc_text(target));
  out += fmt::format("  {:<26}{}\n", "arch", arch_text(target));
  out += fmt::format("  {:<26}{}\n", "SM count", sm_count_text(target));
  std::vector<std::string> kernels;
  for (const auto& kernel : target.kernels) {
    kernels.push_back(fmt::format("{} {}", kernel.name, kernel.params.tag()));
  }
  out +=
      fmt::format("  {:<26}{}\n", "kernels", kernels.empty() ? "(none)" : fmt::format("{}", fmt::join(kernels, ", ")));
  for (const Levers::Entry& entry : levers.entries()) {
    const LeverValue& lever = entry.value;
    out += fmt::format("  {:<26}{:<4}({}: {})\n", entry.spec.toml_key, lever.value ? "on" : "off",
                       to_string(lever.provenance), lever.origin);
  }
  return out;
}

void setup_targets(CLI::App& app, CommandContext& /*context*/) {
  auto* command =
      app.add_subcommand("targets", "List every target: compute capability, arch, SM count, kernels, levers");
  auto as_json = std::make_shared<bool>(false);
  command->add_flag("--json", *as_json, "Print JSON instead of text");
  add_ops_option(command);
  command->callback([as_json] {
    const RuntimeOptions options = runtime_options("");
    const KernelCatalog catalog = target_catalog(options);
    const auto targets = load_targets(options.env, catalog);
    const auto resolve_levers = [&](const HardwareTarget& target) {
      return metrale::resolve_levers(target, catalog.levers(), options.env);
    };
    if (*as_json) {
      nlohmann::json all = nlohmann::json::array();
      for (const auto& target : targets) {
        all.push_back(target_json(target, resolve_levers(target), catalog));
      }
      std::fputs((all.dump(2) + "\n").c_str(), stdout);
      return;
    }
    for (std::size_t i = 0; i < targets.size(); ++i) {
      const std::string text = target_text(targets[i], resolve_levers(targets[i]));
      std::fputs(((i == 0 ? "" : "\n") + text).c_str(), stdout);
    }
  });
}

const CommandRegistration kTargets{"targets", setup_targets};

}  // namespace
}  // namespace metrale::cli
