// cmd_profile.cpp: `metrale-jit profile NAME --target NAME --m M [--n N --k K]
// [--kernel ROLE|NAME ...] [--variant KERNEL:block=..,lanes=..,groups=.. ...] [--json]`: runs the
// op's kernels (a --variant in place of the target's parameters) on the profiled host backend and
// prints, per kernel, its memory traffic, counted FLOPs, the pipeline-latency term ("lat us") and
// the roofline prediction on the target against the op's floor (profile/op_profile.hpp). Registers and occupancy come
// from the target arch's ptxas report (NVRTC through the registry and its cache); without NVRTC
// those columns say "?". Progress goes to stderr. The JSON rows carry the op, kernel and shape
// (m, n, k) so a device run's measured rows can be joined on them (BENCHMARKS.md). NAME is any
// declared op (name or alias) the profile layer has a row for (profile/op_profile.hpp). A kernel
// with a shape constant (the op declaration's shape_constants) whose rule accepts the shape's value
// is priced twice: its generic row, then its specialised one (params tag ending in s<shape>,
// "variant" specialised, registers from its own NVRTC program); a value the rule refuses prices
// the generic alone and a stderr note (and the row's JSON "shape_constant") gives the reason.
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli_support.hpp"
#include "hardware/hardware_loader.hpp"
#include "metrale/error.hpp"
#include "op_plugins.hpp"
#include "op_runtime.hpp"
#include "ops/op_kernels.hpp"
#include "profile/op_profile.hpp"
#include "profile/profile_json.hpp"
#include "profile/shape_variants.hpp"
#include "profile/target_resources.hpp"
#include "profile/variant_override.hpp"

namespace metrale::cli {
namespace {

struct ProfileOptions {
  std::string op;
  std::string target = "hopper";
  std::uint32_t m = 0;
  std::uint32_t n = 96;
  std::uint32_t k = 5120;
  std::uint32_t vheads_per_group = 0;
  std::vector<std::string> kernels;
  std::vector<std::string> variants;
  std::uint64_t budget_blocks = 0;
  bool full = false;
  bool json = false;
};

std::string fixed(double value, int digits) { return fmt::format("{:.{}f}", value, digits); }

std::string rows_text(const std::vector<KernelProfile>& rows) {
  TextTable table({{"kernel"},
                   {"params"},
                   {"grid"},
                   {"cluster", true},
                   {"block"},
                   {"regs", true},
                   {"occ", true},
                   {"DRAM MB", true},
                   {"L2 MB", true},
                   {"sect/req", true},
                   {"MFLOP", true},
                   {"lat us", true},
                   {"pred us", true},
                   {"floor us", true},
                   {"bound"},
                   {"pred/floor", true},
                   {"blocks run", true},
                   {"variant"}});
  for (const auto& row : rows) {
    const LaunchTraffic& t = row.traffic;
    table.add_row({row.kernel, row.params.tag(), to_string(t.grid), std::to_string(t.cluster_blocks),
                   to_string(t.block), row.registers ? std::to_string(*row.registers) : "?",
                   row.occupancy ? fmt::format("{:.0f}%", *row.occupancy * 100) : "?", fixed(t.dram_bytes() / 1e6, 2),
                   fixed(t.l2_bytes() / 1e6, 2), fixed(t.sectors_per_request(), 1),
                   fixed((t.flops + t.tensor_flops) / 1e6, 1), fixed(row.prediction.latency_us, 2),
                   fixed(row.prediction.predicted_us, 2), fixed(row.floor_us, 2), std::string(row.prediction.bound),
                   fixed(row.ratio_to_floor(), 2), fmt::format("{}/{}", t.sampled_blocks, t.total_blocks),
                   row.specialised()
                       ? fmt::format("specialised ({} = {})", row.shape_constant ? row.shape_constant->arg : "shape",
                                     row.shape_constant ? row.shape_constant->value : row.params.shape)
                       : "generic"});
  }
  return table.render();
}

int profile(const ProfileOptions& options) {
  const ops::OpSet all_ops = declared_ops(runtime_options(""));
  const ops::OpDeclaration& declared = require_op(all_ops, options.op);
  if (declared.profile == nullptr) {
    std::vector<std::string_view> known;
    for (const ops::OpDeclaration& op : all_ops.ops()) {
      if (op.profile != nullptr) {
        known.push_back(op.name);
      }
    }
    throw UsageError(fmt::format("profile {}: op {} declares no profile hook (profiled: {})", options.op, declared.name,
                                 fmt::join(known, ", ")));
  }
  const ops::OpProfile& info = *declared.profile;
  const auto targets = load_targets(metrale::ops::library_catalog());
  std::vector<VariantOverride> overrides;
  std::optional<HardwareTarget> with_variants;
  try {
    for (const std::string& spec : options.variants) {
      overrides.push_back(parse_variant_override(spec));
    }
    with_variants = with_variant_overrides(require_target(targets, options.target), declared, overrides);
  } catch (const ArgumentError& error) {
    throw UsageError(error.what());
  }
  // The target as the variants change it: its registers and its launches are the variants'.
  const HardwareTarget& target = *with_variants;
  Progress progress;
  ProfileRequest request;
  request.op = &declared;
  request.shape = {options.m, options.n, options.k, options.vheads_per_group};
  request.kernels = options.kernels;
  request.budget_blocks = options.budget_blocks;
  request.full_grid = options.full;
  if (!target.arch.empty()) {
    progress.step(fmt::format("{}: reading registers from ptxas ({})", target.name, target.arch));
  }
  request.resources = target_kernel_resources(target);
  // The op's shape constants at this shape: a value its rule accepts is priced specialised too.
  request.shape_constants = profile_shape_constants(target, declared, request.shape, info.has_n);
  request.shape_resources = shape_variant_resources(target, request.shape_constants);
  request.progress = [&progress](std::string_view line) { progress.step(line); };
  request.unpriced = [](std::string_view line) { std::fputs(fmt::format("note: {}\n", line).c_str(), stderr); };
  // Before the run: a kernel that then refuses the shape outright still has its note said.
  for (const ProfiledShapeConstant& constant : request.shape_constants) {
    if (const std::string note = shape_constant_note(constant); !note.empty()) {
      std::fputs((note + "\n").c_str(), stderr);
    }
  }
  std::vector<KernelProfile> rows;
  try {
    rows = profile_op(target, request);
  } catch (const ArgumentError& error) {
    throw UsageError(error.what());
  }
  if (options.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& row : rows) {
      out.push_back(profile_row_json(row, target.name));
    }
    std::fputs((out.dump(2) + "\n").c_str(), stdout);
    return kDone;
  }
  std::fputs(fmt::format("{} on {} at M={} K={}{}: floor {:.2f} us ({:.2f} MB compulsory at {:.0f} GB/s)\n", options.op,
                         target.name, options.m, options.k, info.has_n ? fmt::format(" N={}", options.n) : "",
                         rows.empty() ? 0.0 : rows[0].floor_us, compulsory_bytes(declared, request.shape) / 1e6,
                         target.roofline ? target.roofline->dram_gb_per_s : 0.0)
                 .c_str(),
             stdout);
  std::fputs(rows_text(rows).c_str(), stdout);
  return kDone;
}

void setup_profile(CLI::App& app, CommandContext& context) {
  auto* command = app.add_subcommand(
      "profile", "Memory traffic, FLOPs and a roofline prediction of an op's kernels, from the host backend");
  auto options = std::make_shared<ProfileOptions>();
  command->add_option("op", options->op, op_names_help())->required();
  add_ops_option(command);
  command->add_option("--target", options->target, "Target whose [roofline] prices the traffic (default hopper)");
  command->add_option("--m", options->m, "Tokens (M)")->required()->check(CLI::Range(1U, 1U << 24));
  command->add_option("--n", options->n, "BA outputs (N, default 96)")->check(CLI::Range(2U, 1U << 16));
  command->add_option("--k", options->k, "Hidden size (K, default 5120)")->check(CLI::Range(1U, 1U << 20));
  command->add_option("--vheads-per-group", options->vheads_per_group, "BA value heads per group (default 3)");
  command->add_option("--kernel", options->kernels,
                      "A role (parent, twin, shared, quant, ...) or a kernel name (default: all shipped)");
  command->add_option("--variant", options->variants,
                      "KERNEL:block=N,lanes=N,groups=N: profile that kernel at these parameters instead of the "
                      "target's (keys left out keep the target's; repeatable, one per kernel)");
  command->add_option("--budget-blocks", options->budget_blocks,
                      "Blocks run before a grid is sampled (default 2 waves)");
  command->add_flag("--full", options->full, "Run every block (no sampling)");
  command->add_flag("--json", options->json, "Print JSON instead of a table");
  command->callback([options, &context] { run_command(context, [&] { return profile(*options); }); });
}

const CommandRegistration kProfile{"profile", setup_profile};

}  // namespace
}  // namespace metrale::cli
