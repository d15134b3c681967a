// cmd_explain.cpp: `metrale-jit explain NAME --target T [--m M] [--NAME VALUE | --set NAME=VALUE ...]
// [--sm-count S] [--tuning-table FILE] [--lever on|off] [--tensor-core on|off] [--lever-set KEY=on|off] [--json]
// [--ops FILE]`: which kernel any declared op (the library's, or a plug-in's) would run for a shape
// on a target, and each guard's reason; without --m, the smallest M each guarded role takes. It
// asks the op's own explain (OpDeclaration::explain) on a runtime with no device, so it cannot
// disagree with the op: a kernel counts as present when the target's [kernels] ships it, the SM
// count is --sm-count or the target's, a lever is its flag or the file and environment.
// Each shape constant of the op says which variant a call at this shape takes and why (a
// specialised one pinned by the target's [shapes], one built on a call's first sight, or the
// generic with the rule's reason). Output keys: explain_output.hpp. Exit 1: an unknown target or a shape the op
// refuses, or a tuning table that cannot be read; 2: bad usage. With --tuning-table each guarded
// role says where its threshold came from (the table's file and row, or the prediction).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "cli_support.hpp"
#include "explain_output.hpp"
#include "metrale/error.hpp"
#include "op_flags.hpp"
#include "op_plugins.hpp"
#include "op_runtime.hpp"
#include "runtime/runtime_tuning.hpp"

namespace metrale::cli {
namespace {

struct ExplainOptions {
  std::string op;
  std::string target;
  std::optional<std::uint32_t> sm_count;
  std::string tuning_table;
  OpFlags flags;
  bool json = false;
};

// The sizes a shape needs: required scalars a tensor's dims name, other than M (without M,
// explain answers the smallest M instead).
void require_sizes(const ops::OpDeclaration& op, const std::map<std::string, std::uint64_t>& given) {
  for (const ops::ArgDecl& arg : op.args) {
    if (arg.tensor() || arg.fallback || arg.name == "m" || given.contains(arg.name)) {
      continue;
    }
    const bool sizes_a_tensor = std::any_of(op.args.begin(), op.args.end(), [&](const ops::ArgDecl& t) {
      return std::find(t.dims.begin(), t.dims.end(), arg.name) != t.dims.end();
    });
    if (sizes_a_tensor) {
      throw UsageError(fmt::format("explain {}: {} is required ({})", op.name, flag_of(arg.name), arg.doc));
    }
  }
}

int explain(const ExplainOptions& options, const std::vector<std::string>& extras) {
  std::unique_ptr<Runtime> runtime;
  try {
    runtime = open_without_device(options.target);
  } catch (const UnknownTargetError& error) {
    throw ArgumentError(error.what());  // exit 1, as explain always did
  }
  const ops::OpDeclaration& op = require_op(runtime->ops(), options.op);
  const std::map<std::string, std::uint64_t> given = given_scalars(op, options.flags, extras);
  require_sizes(op, given);
  const std::map<std::string, ForcedLever> forced = forced_levers(op, options.flags);
  if (!op.explain) {
    throw UsageError(fmt::format("explain {}: the op declares nothing to explain", op.name));
  }
  ops::OpContext context = runtime->op_context(op.name);
  // A table's thresholds as its device would see them: its SM count unless --sm-count says another
  // (no device here, so its kernel keys are not compared: a runtime on the device does that).
  std::optional<ops::TuningTable> table;
  if (!options.tuning_table.empty()) {
    table = ops::load_tuning_table(options.tuning_table);
    context.tuning = &*table;
    context.fallback_sm_count = table->provenance.sm_count;
  }
  if (options.sm_count) {
    context.fallback_sm_count = *options.sm_count;  // no device: the guards see this count
  }
  std::vector<LeverValue> forced_values;
  forced_values.reserve(forced.size());
  for (const auto& [key, lever] : forced) {
    forced_values.push_back(LeverValue{lever.on, Provenance::kOptions, lever.flag});
    context.levers[*op.lever_index(key)] = &forced_values.back();
  }
  std::vector<ops::NamedArg> shape;
  for (const auto& [name, value] : given) {
    shape.push_back({name, value});
  }
  std::array<std::uint64_t, ops::kMaxArgs> values{};
  const std::span<std::uint64_t> bound(values.data(), op.args.size());
  ops::bind_shape(op, shape, bound);
  ops::Explanation explanation =
      ops::explain_op(context, ops::ExplainQuery{bound, given.contains("m"), ops::given_mask(op, shape)});
  explain_thresholds(context, bound, table ? &*table : nullptr, options.tuning_table, "", explanation);
  for (ops::RoleExplanation& row : explanation.roles) {
    if (const auto lever = forced.find(row.lever); lever != forced.end()) {
      row.lever_origin = lever->second.flag;  // "--lever on", as the user wrote it
    }
  }
  const std::vector<ShapeVariantState> shapes = runtime->shape_variants(op.name, shape);
  const std::string out = options.json ? explain_json(explanation, options.op, shapes).dump(2) + "\n"
                                       : explain_text(explanation, options.op, shapes);
  std::fputs(out.c_str(), stdout);
  return kDone;
}

void setup_explain(CLI::App& app, CommandContext& context) {
  auto* command = app.add_subcommand("explain", "Say which kernel an op picks for a shape, and why");
  auto options = std::make_shared<ExplainOptions>();
  command->add_option("op", options->op, op_names_help())->required();
  command->add_option("--target", options->target, "Target name (hopper, gb10, b200, b300, generic)")->required();
  command->add_option("--sm-count", options->sm_count, "SM count (default: the target's)");
  command->add_option("--tuning-table", options->tuning_table,
                      "Hold M to this tuning table's measured thresholds (`metrale-jit tune`) and name its rows");
  command->add_flag("--json", options->json, "Print JSON (keys kernel, twin, reject, ...)");
  add_op_flags(command, options->flags, true);
  add_ops_option(command);
  command->footer(
      "The op's scalars are flags: --m M (tokens; without it, the smallest M each fast kernel takes), --n, --k,\n"
      "--k-stride, ... (any declared scalar, '_' written '-', or --set NAME=VALUE).");
  command->callback(
      [command, options, &context] { run_command(context, [&] { return explain(*options, command->remaining()); }); });
}

const CommandRegistration kExplain{"explain", setup_explain};

}  // namespace
}  // namespace metrale::cli
