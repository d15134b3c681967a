// kernel_catalog.cpp: a catalog of declared kernels, and the checks a target's [kernels] table
// gets against it.
// Why placeholders and not a callback: a target file must be able to declare a kernel in full
// (the CLI has no engine code), so a name expression is data the loader can check and fill in.
#include "hardware/kernel_catalog.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "hardware/variant_expression.hpp"
#include "metrale/error.hpp"

namespace metrale {
namespace {

constexpr std::array<std::string_view, 3> kParamNames{"block", "lanes", "groups"};
// The shape constant's placeholder: not a [kernels] key (0 is a value: the generic form).
constexpr std::string_view kShapeParam = "shape";

std::uint32_t param_value(const KernelParams& params, std::string_view name) {
  if (name == "block") {
    return params.block;
  }
  if (name == "lanes") {
    return params.lanes;
  }
  if (name == kShapeParam) {
    return params.shape;
  }
  return params.groups;
}

// A {shape} placeholder in the expression: the template takes a shape constant.
bool takes_shape(const KernelDeclaration& declaration) {
  return declaration.expression.find("{shape}") != std::string::npos;
}

bool declares(const KernelDeclaration& declaration, std::string_view param) {
  return std::find(declaration.params.begin(), declaration.params.end(), param) != declaration.params.end();
}

// Every {name} of `pattern`, in order; ArgumentError for an unclosed brace.
std::vector<std::string> placeholders(std::string_view pattern) {
  std::vector<std::string> found;
  for (std::size_t at = pattern.find('{'); at != std::string_view::npos; at = pattern.find('{', at + 1)) {
    const std::size_t end = pattern.find('}', at);
    if (end == std::string_view::npos) {
      throw ArgumentError(fmt::format("expression '{}': '{{' at {} is never closed", pattern, at));
    }
    found.emplace_back(pattern.substr(at + 1, end - at - 1));
  }
  return found;
}

std::string at_line(const HardwareTarget& target, std::uint32_t line) {
  return line != 0 ? fmt::format("{}:{}", target.source, line) : target.source;
}

}  // namespace

std::string expand_kernel_expression(std::string_view pattern, const KernelParams& params) {
  std::string out;
  std::size_t from = 0;
  for (std::size_t at = pattern.find('{'); at != std::string_view::npos; at = pattern.find('{', from)) {
    const std::size_t end = pattern.find('}', at);
    if (end == std::string_view::npos) {
      throw ArgumentError(fmt::format("expression '{}': '{{' at {} is never closed", pattern, at));
    }
    const std::string_view name = pattern.substr(at + 1, end - at - 1);
    if (std::find(kParamNames.begin(), kParamNames.end(), name) == kParamNames.end() && name != kShapeParam) {
      throw ArgumentError(
          fmt::format("expression '{}': unknown placeholder {{{}}} (allowed: {{block}}, {{lanes}}, "
                      "{{groups}}, {{shape}})",
                      pattern, name));
    }
    out.append(pattern.substr(from, at - from));
    out += std::to_string(param_value(params, name));
    from = end + 1;
  }
  out.append(pattern.substr(from));
  return out;
}

std::string expand_variant_expression(std::string_view pattern, const KernelParams& params) {
  for (const std::string& name : placeholders(pattern)) {
    if (std::find(kParamNames.begin(), kParamNames.end(), name) == kParamNames.end()) {
      throw ArgumentError(fmt::format(
          "expression '{}': unknown placeholder {{{}}} (allowed: {{block}}, {{lanes}}, {{groups}})", pattern, name));
    }
    // 0 means "not taken" (and is part of the variant's key): a {block} of block 0 would
    // instantiate the template at 0, never what was meant.
    if (param_value(params, name) == 0) {
      throw ArgumentError(fmt::format(
          "expression '{}' uses {{{}}}, but the variant's {} is 0 (not taken): give it a value", pattern, name, name));
    }
  }
  return expand_kernel_expression(pattern, params);
}

void KernelCatalog::add(KernelDeclaration declaration) {
  if (declaration.kernel.empty() || declaration.source.empty() || declaration.expression.empty()) {
    throw ArgumentError(
        fmt::format("kernel declaration '{}' needs a kernel name, a source and an expression", declaration.kernel));
  }
  for (const std::string& param : declaration.params) {
    if (std::find(kParamNames.begin(), kParamNames.end(), param) == kParamNames.end()) {
      throw ArgumentError(fmt::format("kernel declaration '{}': unknown parameter '{}' (allowed: block, lanes, groups)",
                                      declaration.kernel, param));
    }
  }
  for (const std::string& name : placeholders(declaration.expression)) {
    if (name != kShapeParam && !declares(declaration, name)) {
      throw ArgumentError(
          fmt::format("kernel declaration '{}': expression '{}' uses {{{}}}, which is not one of its "
                      "parameters ({})",
                      declaration.kernel, declaration.expression, name, fmt::join(declaration.params, ", ")));
    }
  }
  if (const KernelDeclaration* known = find(declaration.kernel)) {
    if (known->source != declaration.source || known->expression != declaration.expression) {
      throw ArgumentError(fmt::format("kernel '{}' is already declared with source '{}' and expression '{}'",
                                      declaration.kernel, known->source, known->expression));
    }
    return;
  }
  declarations_.push_back(std::move(declaration));
}

const KernelDeclaration* KernelCatalog::find(std::string_view kernel) const {
  const auto found = std::find_if(declarations_.begin(), declarations_.end(),
                                  [&](const KernelDeclaration& d) { return d.kernel == kernel; });
  return found == declarations_.end() ? nullptr : &*found;
}

void KernelCatalog::add_lever(LeverSpec lever) {
  if (lever.toml_key.empty()) {
    throw ArgumentError("a lever needs a [defaults] key");
  }
  if (find_lever(lever.toml_key) == nullptr) {
    levers_.push_back(std::move(lever));
  }
}

const LeverSpec* KernelCatalog::find_lever(std::string_view toml_key) const {
  auto it = std::find_if(levers_.begin(), levers_.end(), [&](const LeverSpec& l) { return l.toml_key == toml_key; });
  return it == levers_.end() ? nullptr : &*it;
}

std::vector<std::string> KernelCatalog::names() const {
  std::vector<std::string> out;
  out.reserve(declarations_.size());
  for (const KernelDeclaration& declaration : declarations_) {
    out.push_back(declaration.kernel);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<KernelParamsProblem> KernelCatalog::check(std::string_view kernel, const KernelParams& params) const {
  const KernelDeclaration* declaration = find(kernel);
  if (declaration == nullptr) {
    return KernelParamsProblem{"", fmt::format("unknown kernel '{}' (known: {})", kernel, fmt::join(names(), ", "))};
  }
  if (params.shape != 0 && !takes_shape(*declaration)) {
    return KernelParamsProblem{
        std::string(kShapeParam),
        fmt::format("shape = {}: must be absent (the template takes no shape constant)", params.shape)};
  }
  if (declaration->rule) {
    if (auto problem = declaration->rule(params)) {
      return problem;
    }
  }
  for (const std::string_view name : kParamNames) {
    const std::uint32_t value = param_value(params, name);
    if (declares(*declaration, name) && value == 0) {
      return KernelParamsProblem{name, fmt::format("{} = 0: must be set (a parameter of the template)", name)};
    }
    if (!declares(*declaration, name) && value != 0) {
      return KernelParamsProblem{name,
                                 fmt::format("{} = {}: must be absent (the template does not take it)", name, value)};
    }
  }
  return std::nullopt;
}

KernelVariant KernelCatalog::variant(std::string_view kernel, const KernelParams& params) const {
  const KernelDeclaration* declaration = find(kernel);
  if (declaration == nullptr) {
    throw ArgumentError(fmt::format("unknown kernel '{}' (known: {})", kernel, fmt::join(names(), ", ")));
  }
  return KernelVariant{declaration->kernel, declaration->source,
                       expand_kernel_expression(declaration->expression, params), params, declaration->background};
}

KernelCatalog complete_catalog(const KernelCatalog& base, std::span<const HardwareTarget> targets) {
  KernelCatalog catalog = base;
  for (const HardwareTarget& target : targets) {
    for (const KernelEntry& entry : target.kernels) {
      if (entry.source.empty()) {
        continue;
      }
      std::vector<std::string> params;
      for (const std::string_view name : kParamNames) {
        if (param_value(entry.params, name) != 0) {
          params.emplace_back(name);
        }
      }
      try {
        catalog.add(
            KernelDeclaration{entry.name, entry.source, entry.expression, std::move(params), {}, false, false, {}});
      } catch (const ArgumentError& error) {
        throw ConfigError(fmt::format("{}: kernels.{}: {}", at_line(target, entry.line), entry.name, error.what()));
      }
    }
  }
  return catalog;
}

void check_target_kernels(const HardwareTarget& target, const KernelCatalog& catalog) {
  for (const KernelEntry& entry : target.kernels) {
    if (const auto problem = catalog.check(entry.name, entry.params)) {
      const std::string key = problem->param.empty() ? fmt::format("kernels.{}", entry.name)
                                                     : fmt::format("kernels.{}.{}", entry.name, problem->param);
      // A parameter of 0 is one the file left out (the parser refuses 0 as a value).
      const bool missing = !problem->param.empty() && param_value(entry.params, problem->param) == 0;
      const std::string reason = problem->param.empty()
                                     ? fmt::format("unknown kernel (known: {})", fmt::join(catalog.names(), ", "))
                                 : missing ? "missing key; " + problem->reason
                                           : problem->reason;
      throw ConfigError(fmt::format("{}: {}: {}", at_line(target, entry.line), key, reason));
    }
  }
  for (const KernelEntry& twin : target.kernels) {
    const KernelDeclaration* declaration = catalog.find(twin.name);
    const KernelEntry* parent = declaration->twin_of.empty() ? nullptr : target.find_kernel(declaration->twin_of);
    if (parent == nullptr || !declaration->same_shape) {
      continue;
    }
    if (twin.params.block != parent->params.block || twin.params.lanes != parent->params.lanes) {
      throw ConfigError(
          fmt::format("{}: kernels.{}: block/lanes ({}, {}) differ from kernels.{} ({}, {}); the twin "
                      "must reduce in its parent's shape to produce the same bytes",
                      at_line(target, twin.line), twin.name, twin.params.block, twin.params.lanes, parent->name,
                      parent->params.block, parent->params.lanes));
    }
  }
}

}  // namespace metrale
