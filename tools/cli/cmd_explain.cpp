// cmd_explain.cpp: `metrale-jit explain ba-gates|fp8-quant`: which kernel an op would run for a
// shape on a target, whether it is the twin, and the guard's reason; without --m, the smallest
// M the twin takes. It calls the ops' own pick functions, so it cannot disagree with them:
// a kernel counts as present when the target's [kernels] ships it.
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "command.hpp"
#include "metrale/error.hpp"
#include "metrale/ops/fp8_act_quant.hpp"
#include "metrale/ops/ssm_ba_gates.hpp"
#include "metrale/target/levers.hpp"
#include "ops/fp8_act_quant_floor.hpp"
#include "ops/op_kernels.hpp"
#include "ops/ssm_ba_gates_guard.hpp"
#include "target/hardware_loader.hpp"
#include "target/target_selection.hpp"

namespace metrale::cli {
namespace {

struct ExplainOptions {
  std::string target;
  std::optional<std::uint32_t> m;
  std::uint32_t n = 0;
  std::uint32_t k = 0;
  std::optional<std::uint32_t> k_stride;
  std::optional<std::uint32_t> sm_count;
  std::string lever;  // "", "on" or "off"
  bool json = false;
};

// What the command reports, for one op and shape.
struct Verdict {
  std::string kernel;  // the kernel name that would run
  bool twin = false;
  std::optional<std::string> reject;
  std::uint32_t sm_count = 0;
  bool requested = false;
  std::string lever_origin;
};

// A stand-in handle: present when the target ships the kernel. Only presence matters to a pick.
KernelHandle shipped(const HardwareTarget& target, std::string_view kernel) {
  return KernelHandle{target.find_kernel(kernel) != nullptr ? 1u : 0u};
}

struct Context {
  HardwareTarget target;
  bool requested = false;
  std::string lever_origin;
  std::uint32_t sm_count = 0;
};

Context resolve(const ExplainOptions& options, LeverValue Levers::*lever_field) {
  const auto targets = load_targets();
  const HardwareTarget* target = find_target(targets, options.target);
  if (target == nullptr) {
    std::string names;
    for (const auto& t : targets) {
      names += (names.empty() ? "" : ", ") + t.name;
    }
    throw ArgumentError(fmt::format("--target {}: no such target (known: {})", options.target, names));
  }
  Context context{*target, false, "", 0};
  const LeverValue lever = resolve_levers(*target).*lever_field;
  if (options.lever.empty()) {
    context.requested = lever.value;
    context.lever_origin = fmt::format("{}: {}", to_string(lever.provenance), lever.origin);
  } else {
    context.requested = options.lever == "on";
    context.lever_origin = "--lever " + options.lever;
  }
  // The ops fall back to the Hopper SM count when the device cannot say; generic has none of its own.
  context.sm_count = options.sm_count.value_or(target->sm_count.value_or(kFallbackSmCount));
  return context;
}

void print(const ExplainOptions& options, const Verdict& verdict, std::string_view op) {
  if (options.json) {
    nlohmann::json out = {{"op", op},
                          {"target", options.target},
                          {"kernel", verdict.kernel},
                          {"twin", verdict.twin},
                          {"reject", verdict.reject ? nlohmann::json(*verdict.reject) : nlohmann::json(nullptr)},
                          {"m", options.m ? nlohmann::json(*options.m) : nlohmann::json(nullptr)},
                          {"sm_count", verdict.sm_count},
                          {"requested", verdict.requested},
                          {"lever", verdict.lever_origin}};
    std::fputs((out.dump(2) + "\n").c_str(), stdout);
    return;
  }
  std::fputs(fmt::format("{} on {} (SM count {}, lever {} from {}):\n  runs   {}{}\n  reason {}\n", op, options.target,
                         verdict.sm_count, verdict.requested ? "on" : "off", verdict.lever_origin, verdict.kernel,
                         verdict.twin ? " (the twin)" : "", verdict.reject.value_or("none: the twin runs"))
                 .c_str(),
             stdout);
}

// Without --m: the smallest M the twin takes, or why it never does for this shape.
void print_min_m(const ExplainOptions& options, std::string_view op, std::string_view twin_name, std::uint32_t min_m,
                 const std::optional<std::string_view>& reject_at_min) {
  if (options.json) {
    nlohmann::json out = {{"op", op},
                          {"target", options.target},
                          {"twin_kernel", twin_name},
                          {"min_m", reject_at_min ? nlohmann::json(nullptr) : nlohmann::json(min_m)},
                          {"reject", reject_at_min ? nlohmann::json(*reject_at_min) : nlohmann::json(nullptr)}};
    std::fputs((out.dump(2) + "\n").c_str(), stdout);
  } else if (reject_at_min) {
    std::fputs(fmt::format("{} never runs {} for this shape: {}\n", op, twin_name, *reject_at_min).c_str(), stdout);
  } else {
    std::fputs(fmt::format("{} runs {} for M >= {}\n", op, twin_name, min_m).c_str(), stdout);
  }
}

void explain_ba_gates(const ExplainOptions& options) {
  const Context context = resolve(options, &Levers::ssm_ba_gates_hopper);
  const KernelHandle parent = shipped(context.target, ops::kBaGatesParentKernel);
  const KernelHandle twin = shipped(context.target, ops::kBaGatesTwinKernel);
  const std::uint32_t k_stride = options.k_stride.value_or(options.k);
  if (!options.m) {
    const std::uint32_t min_m = ops::ba_gates_min_tokens(context.sm_count);
    const auto reject = ops::ssm_ba_gates_hopper_reject(context.requested, twin.present(), min_m, options.n, options.k,
                                                        k_stride, context.sm_count);
    print_min_m(options, "ba-gates", ops::kBaGatesTwinKernel, min_m, reject);
    return;
  }
  const ops::BaGatesPick pick =
      ops::ba_gates_pick(context.requested, parent, twin, *options.m, options.n, options.k, k_stride, context.sm_count);
  Verdict verdict{std::string(pick.twin ? ops::kBaGatesTwinKernel : ops::kBaGatesParentKernel),
                  pick.twin,
                  pick.reject ? std::optional<std::string>(*pick.reject) : std::nullopt,
                  context.sm_count,
                  context.requested,
                  context.lever_origin};
  print(options, verdict, "ba-gates");
}

void explain_fp8_quant(const ExplainOptions& options) {
  const Context context = resolve(options, &Levers::fp8_act_quant_hopper);
  ops::Fp8QuantKernels kernels;
  kernels.shared = shipped(context.target, ops::kFp8QuantSharedKernel);
  kernels.twin = shipped(context.target, ops::kFp8QuantTwinKernel);
  if (!options.m) {
    const std::uint32_t min_m = ops::fp8_quant_hopper_min_m(options.k, context.sm_count);
    const auto reject = ops::fp8_act_quant_hopper_reject(context.requested, kernels.twin.present(),
                                                         kernels.shared.present(), min_m, options.k, context.sm_count);
    print_min_m(options, "fp8-quant", ops::kFp8QuantTwinKernel, min_m, reject);
    return;
  }
  const ops::Fp8QuantPick pick =
      ops::fp8_quant_pick(context.requested, kernels, *options.m, options.k, context.sm_count);
  Verdict verdict{std::string(pick.twin ? ops::kFp8QuantTwinKernel : ops::kFp8QuantSharedKernel),
                  pick.twin,
                  pick.reject ? std::optional<std::string>(*pick.reject) : std::nullopt,
                  context.sm_count,
                  context.requested,
                  context.lever_origin};
  print(options, verdict, "fp8-quant");
}

void add_common(CLI::App* command, ExplainOptions& options) {
  command->add_option("--target", options.target, "Target name (hopper, gb10, b200, b300, generic)")->required();
  command->add_option("--m", options.m, "Tokens; without it, print the smallest M the twin takes");
  command->add_option("--k", options.k, "Reduction length K")->required();
  command->add_option("--sm-count", options.sm_count, "SM count (default: the target's)");
  command->add_option("--lever", options.lever, "Force the lever instead of the file and environment")
      ->check(CLI::IsMember({"on", "off"}));
  command->add_flag("--json", options.json, "Print JSON (keys kernel, twin, reject)");
}

void setup_explain(CLI::App& app, CommandContext& /*context*/) {
  auto* explain = app.add_subcommand("explain", "Say which kernel an op picks for a shape, and why");
  explain->require_subcommand(1);
  auto options = std::make_shared<ExplainOptions>();

  auto* ba = explain->add_subcommand("ba-gates", "The SSM BA-gates projection");
  add_common(ba, *options);
  ba->add_option("--n", options->n, "Outputs N")->required();
  ba->add_option("--k-stride", options->k_stride, "Row stride of x in elements (default K)");
  ba->callback([options] { explain_ba_gates(*options); });

  auto* fp8 = explain->add_subcommand("fp8-quant", "Per-token-group FP8 activation quantisation");
  add_common(fp8, *options);
  fp8->callback([options] { explain_fp8_quant(*options); });
}

const CommandRegistration kExplain{"explain", setup_explain};

}  // namespace
}  // namespace metrale::cli
