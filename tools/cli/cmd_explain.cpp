// cmd_explain.cpp: `metrale-jit explain ba-gates|fp8-quant`: which kernel an op would run for a
// shape on a target, whether it is the twin, and the guard's reason (for ba-gates also the
// tensor-core guard's, which comes first); without --m, the smallest M the twin (and the
// tensor-core kernel) takes. It calls the ops' own pick functions, so it cannot disagree with them:
// a kernel counts as present when the target's [kernels] ships it.
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "command.hpp"
#include "metrale/error.hpp"
#include "metrale/ops/fp8_act_quant.hpp"
#include "metrale/ops/ssm_ba_gates.hpp"
#include "metrale/target/levers.hpp"
#include "ops/fp8_act_quant_floor.hpp"
#include "ops/op_kernels.hpp"
#include "ops/ssm_ba_gates_guard.hpp"
#include "ops/ssm_ba_gates_mma_guard.hpp"
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
  std::string lever;        // "", "on" or "off"
  std::string tensor_core;  // ba-gates: "", "on" or "off" (the ssm_ba_gates_tensor_core lever)
  bool json = false;
};

// The tensor-core guard's side of a ba-gates verdict.
struct TensorCoreVerdict {
  bool runs = false;
  std::optional<std::string> reject;
  bool requested = false;
  std::string lever_origin;
  std::uint32_t tokens_per_tile = 0;
  std::uint32_t cluster_blocks = 1;  // CTAs splitting each tile's K (ops::ba_gates_mma_cluster_blocks)
};

// What the command reports, for one op and shape.
struct Verdict {
  std::string kernel;  // the kernel name that would run
  bool twin = false;
  std::optional<std::string> reject;
  std::uint32_t sm_count = 0;
  bool requested = false;
  std::string lever_origin;
  std::optional<TensorCoreVerdict> tensor_core{};  // ba-gates only
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

// A lever's value and where it came from: the --flag when given ("on"/"off"), else the file
// and environment.
std::pair<bool, std::string> lever_value(const HardwareTarget& target, LeverValue Levers::*lever_field,
                                         const std::string& forced, std::string_view flag) {
  if (!forced.empty()) {
    return {forced == "on", fmt::format("{} {}", flag, forced)};
  }
  const LeverValue lever = resolve_levers(target).*lever_field;
  return {lever.value, fmt::format("{}: {}", to_string(lever.provenance), lever.origin)};
}

Context resolve(const ExplainOptions& options, LeverValue Levers::*lever_field) {
  const auto targets = load_targets(metrale::ops::library_catalog());
  const HardwareTarget* target = find_target(targets, options.target);
  if (target == nullptr) {
    std::string names;
    for (const auto& t : targets) {
      names += (names.empty() ? "" : ", ") + t.name;
    }
    throw ArgumentError(fmt::format("--target {}: no such target (known: {})", options.target, names));
  }
  Context context{*target, false, "", 0};
  std::tie(context.requested, context.lever_origin) = lever_value(*target, lever_field, options.lever, "--lever");
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
    if (const auto& tc = verdict.tensor_core) {
      out["tensor_core"] = {{"runs", tc->runs},
                            {"reject", tc->reject ? nlohmann::json(*tc->reject) : nlohmann::json(nullptr)},
                            {"requested", tc->requested},
                            {"lever", tc->lever_origin},
                            {"tokens_per_tile", tc->tokens_per_tile},
                            {"cluster_blocks", tc->cluster_blocks}};
    }
    std::fputs((out.dump(2) + "\n").c_str(), stdout);
    return;
  }
  std::string text = fmt::format("{} on {} (SM count {}, lever {} from {}):\n  runs   {}{}\n", op, options.target,
                                 verdict.sm_count, verdict.requested ? "on" : "off", verdict.lever_origin,
                                 verdict.kernel, verdict.twin ? " (the twin)" : "");
  if (const auto& tc = verdict.tensor_core) {
    text += fmt::format("  tensor-core kernel: {} (lever {} from {})\n",
                        tc->runs ? "runs" : "declines: " + tc->reject.value_or(""), tc->requested ? "on" : "off",
                        tc->lever_origin);
    if (tc->runs) {
      text += fmt::format("  tiles of {} tokens, each tile's K split over {} CTA{} (a thread-block cluster)\n",
                          tc->tokens_per_tile, tc->cluster_blocks, tc->cluster_blocks == 1 ? "" : "s");
    }
  }
  if (!verdict.tensor_core || !verdict.tensor_core->runs) {
    text += fmt::format("  reason {}\n", verdict.reject.value_or("none: the twin runs"));
  }
  std::fputs(text.c_str(), stdout);
}

// One kernel's smallest M, or the reason it never runs for the shape.
struct MinM {
  std::string_view kernel;
  std::uint32_t min_m = 0;
  std::optional<std::string_view> reject;
};

std::string min_m_line(std::string_view op, const MinM& row) {
  return row.reject ? fmt::format("{} never runs {} for this shape: {}\n", op, row.kernel, *row.reject)
                    : fmt::format("{} runs {} for M >= {}\n", op, row.kernel, row.min_m);
}

// Without --m: the smallest M the twin takes, or why it never does for this shape; for ba-gates
// also the tensor-core kernel's (JSON: the tensor_core_* keys).
void print_min_m(const ExplainOptions& options, std::string_view op, const MinM& twin,
                 const std::optional<MinM>& tensor_core = std::nullopt) {
  if (options.json) {
    nlohmann::json out = {{"op", op},
                          {"target", options.target},
                          {"twin_kernel", twin.kernel},
                          {"min_m", twin.reject ? nlohmann::json(nullptr) : nlohmann::json(twin.min_m)},
                          {"reject", twin.reject ? nlohmann::json(*twin.reject) : nlohmann::json(nullptr)}};
    if (tensor_core) {
      out["tensor_core_kernel"] = tensor_core->kernel;
      out["tensor_core_min_m"] = tensor_core->reject ? nlohmann::json(nullptr) : nlohmann::json(tensor_core->min_m);
      out["tensor_core_reject"] = tensor_core->reject ? nlohmann::json(*tensor_core->reject) : nlohmann::json(nullptr);
    }
    std::fputs((out.dump(2) + "\n").c_str(), stdout);
    return;
  }
  std::string text = min_m_line(op, twin);
  if (tensor_core) {
    text += min_m_line(op, *tensor_core);
  }
  std::fputs(text.c_str(), stdout);
}

// The tensor-core kernel's parameters on this target (`lanes` its token tile, `groups` its
// stages), or the shipped defaults.
KernelParams kernel_params(const Context& context) {
  const KernelEntry* entry = context.target.find_kernel(ops::kBaGatesMmaKernel);
  return entry != nullptr ? entry->params : ops::BaGatesKernels{}.mma_params;
}

// The tensor-core guard's query for the shape: the target's compute capability and its shared
// memory limit, buffers assumed 16-byte aligned (the op refuses others before any guard runs).
ops::BaGatesMmaQuery tensor_core_query(const ExplainOptions& options, const Context& context, bool requested,
                                       std::uint32_t m) {
  ops::BaGatesMmaQuery query;
  query.requested = requested;
  query.kernel_present = shipped(context.target, ops::kBaGatesMmaKernel).present();
  ops::set_mma_variant(query, kernel_params(context), context.target.compute_capability, std::nullopt);
  query.m = m;
  query.n = options.n;
  query.k = options.k;
  query.k_stride = options.k_stride.value_or(options.k);
  query.sm_count = context.sm_count;
  return query;
}

void explain_ba_gates(const ExplainOptions& options) {
  const Context context = resolve(options, &Levers::ssm_ba_gates_hopper);
  const auto [tc_requested, tc_origin] =
      lever_value(context.target, &Levers::ssm_ba_gates_tensor_core, options.tensor_core, "--tensor-core");
  const KernelHandle parent = shipped(context.target, ops::kBaGatesParentKernel);
  const KernelHandle twin = shipped(context.target, ops::kBaGatesTwinKernel);
  const KernelHandle mma = shipped(context.target, ops::kBaGatesMmaKernel);
  const std::uint32_t k_stride = options.k_stride.value_or(options.k);
  if (!options.m) {
    const std::uint32_t min_m = ops::ba_gates_min_tokens(context.sm_count);
    const auto reject = ops::ssm_ba_gates_hopper_reject(context.requested, twin.present(), min_m, options.n, options.k,
                                                        k_stride, context.sm_count);
    ops::BaGatesMmaQuery at_min = tensor_core_query(options, context, tc_requested, 0);
    at_min.m = ops::ba_gates_mma_min_m(at_min);
    print_min_m(options, "ba-gates", MinM{ops::kBaGatesTwinKernel, min_m, reject},
                MinM{ops::kBaGatesMmaKernel, at_min.m, ops::ssm_ba_gates_mma_reject(at_min)});
    return;
  }
  const ops::BaGatesMmaQuery query = tensor_core_query(options, context, tc_requested, *options.m);
  const ops::BaGatesPick pick = ops::ba_gates_pick_with_mma(query, mma, context.requested, parent, twin);
  const std::string_view kernel =
      pick.mma ? ops::kBaGatesMmaKernel : (pick.twin ? ops::kBaGatesTwinKernel : ops::kBaGatesParentKernel);
  Verdict verdict{
      std::string(kernel),
      pick.twin,
      pick.reject ? std::optional<std::string>(*pick.reject) : std::nullopt,
      context.sm_count,
      context.requested,
      context.lever_origin,
      TensorCoreVerdict{pick.mma, pick.mma_reject ? std::optional<std::string>(*pick.mma_reject) : std::nullopt,
                        tc_requested, tc_origin, query.tokens_per_block,
                        ops::ba_gates_mma_cluster_blocks(*options.m, query.tokens_per_block, options.k,
                                                         context.sm_count, context.target.compute_capability)}};
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
    print_min_m(options, "fp8-quant", MinM{ops::kFp8QuantTwinKernel, min_m, reject});
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
  ba->add_option("--tensor-core", options->tensor_core, "Force the ssm_ba_gates_tensor_core lever")
      ->check(CLI::IsMember({"on", "off"}));
  ba->callback([options] { explain_ba_gates(*options); });

  auto* fp8 = explain->add_subcommand("fp8-quant", "Per-token-group FP8 activation quantisation");
  add_common(fp8, *options);
  fp8->callback([options] { explain_fp8_quant(*options); });
}

const CommandRegistration kExplain{"explain", setup_explain};

}  // namespace
}  // namespace metrale::cli
