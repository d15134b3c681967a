// cmd_run.cpp: `metrale-jit run NAME --in DIR --out DIR [--target T] [--kernel ROLE]
// [--NAME VALUE | --set NAME=VALUE ...] [--ops FILE]`: runs any declared op on .npy tensors on the
// CUDA device, or the host backend without one, and writes its outputs as .npy: how a user
// reproduces a kernel's output outside an engine. Each input tensor argument is DIR/<arg>.npy; each
// output is written as OUT/<arg>.npy (tensor_files.hpp: dtypes, and sizes from the shapes).
// bf16 travels as uint16 bit patterns, e4m3 as uint8. The BA-gates op reads x, weight, a_log,
// dt_bias and writes gate_out; the FP8 quant reads x and writes q and scales (their declarations
// say so).
// Exit 2: bad flags, an unknown op or role, a role the target does not ship; exit 1: a bad input
// file (named) or a failing op.
#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "cli_support.hpp"
#include "metrale/error.hpp"
#include "op_flags.hpp"
#include "op_plugins.hpp"
#include "op_runtime.hpp"
#include "tensor_files.hpp"

namespace metrale::cli {
namespace {

struct RunOptions {
  std::string op, in, out, target, kernel;
  OpFlags flags;
};

std::filesystem::path prepare_out(const RunOptions& options) {
  std::error_code error;
  std::filesystem::create_directories(options.out, error);
  if (error) {
    throw UsageError(fmt::format("--out {}: cannot create it: {}", options.out, error.message()));
  }
  return options.out;
}

std::string shape_text(const ops::OpDeclaration& op, const std::map<std::string, std::uint64_t>& sizes) {
  std::vector<std::string> parts;
  for (const ops::ArgDecl& arg : op.args) {
    if (const auto found = sizes.find(arg.name); found != sizes.end() && !arg.tensor()) {
      parts.push_back(fmt::format("{}={}", arg.name, found->second));
    }
  }
  return fmt::format("{}", fmt::join(parts, " "));
}

int run_files(const RunOptions& options, const std::vector<std::string>& extras) {
  auto runtime_first = [&] { return open_device_or_host(options.target); };
  // The op and its flags are checked before any file is read (bad usage exits 2 first).
  const ops::OpSet declared = declared_ops(runtime_options(options.target));
  const ops::OpDeclaration& op = require_op(declared, options.op);
  const std::string role = options.kernel.empty() ? "" : std::string(require_role(op, options.kernel, "--kernel"));
  std::map<std::string, std::uint64_t> scalars = given_scalars(op, options.flags, extras);
  require_unsized_scalars(op, scalars);
  TensorFiles files = read_inputs(op, options.in, scalars);
  const std::filesystem::path out_dir = prepare_out(options);
  auto runtime = runtime_first();
  GpuBackend* gpu = runtime->backend();
  if (gpu == nullptr) {
    throw BackendError(fmt::format("no device: {}", runtime->no_device_reason()));
  }
  DeviceTensors tensors(*gpu, op, files, scalars);
  ops::Pick pick;
  try {
    pick = runtime->run(op.name, tensors.named_args(scalars), 0, role);
  } catch (const KernelChoiceError& error) {
    throw UsageError(fmt::format("--kernel: {}", error.what()));
  }
  gpu->synchronize(0);
  const std::vector<std::filesystem::path> written = tensors.write_outputs(out_dir);
  std::vector<std::string> reasons;
  for (const ops::Verdict& verdict : pick.ordered_verdicts()) {
    reasons.push_back(fmt::format(
        "{}: {}", verdict.role,
        verdict.reason ? (*verdict.reason == ops::kForcedKernelReason ? "forced by --kernel" : *verdict.reason)
                       : "runs"));
  }
  std::vector<std::string> paths;
  for (const auto& path : written) {
    paths.push_back(path.string());
  }
  std::fputs(
      fmt::format("{} {} on {} (target {}): ran {} ({})\n  reason {}\nwrote {}\n", options.op, shape_text(op, scalars),
                  gpu->describe(), runtime->target().name, pick.kernel, pick.role,
                  reasons.empty() ? "none" : fmt::format("{}", fmt::join(reasons, "; ")), fmt::join(paths, " and "))
          .c_str(),
      stdout);
  return kDone;
}

void setup_run(CLI::App& app, CommandContext& context) {
  auto* command =
      app.add_subcommand("run", "Run an op on .npy tensors (device, else host backend); write .npy outputs");
  auto options = std::make_shared<RunOptions>();
  command->add_option("op", options->op, op_names_help())->required();
  command->add_option("--in", options->in, "Folder holding the input .npy files (one per input tensor argument)")
      ->required()
      ->check(CLI::ExistingDirectory);
  command->add_option("--out", options->out, "Folder for the output .npy files (created)")->required();
  command->add_option("--target", options->target, "Target (default: the device's, else hopper)");
  command->add_option("--kernel", options->kernel,
                      "Force one kernel by role or alias (parent, twin, shared, mma, ...) instead of the guards");
  add_op_flags(command, options->flags, false);
  add_ops_option(command);
  command->footer(
      "Reads DIR/<arg>.npy for each input tensor argument of the op (bf16 as uint16 bits, fp32 as float32,\n"
      "e4m3 and u8 as uint8), fills the sizes from their shapes, and writes OUT/<arg>.npy for each output;\n"
      "other scalars are --NAME VALUE ('_' written '-') or --set NAME=VALUE. `explain` shows an op's arguments.\n"
      "Exit 0 done, 1 a bad input file or a failing op, 2 bad usage.");
  command->callback([command, options, &context] {
    run_command(context, [&] { return run_files(*options, command->remaining()); });
  });
}

const CommandRegistration kRun{"run", setup_run};

}  // namespace
}  // namespace metrale::cli
