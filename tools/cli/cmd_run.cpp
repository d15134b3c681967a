// cmd_run.cpp: `metrale-jit run ba-gates|fp8-quant --in DIR --out DIR [--target NAME]
// [--kernel ...]`: runs one op on .npy tensors on the CUDA device, or the host backend
// without one, and writes its outputs as .npy: how a user reproduces a kernel's output
// outside an engine. bf16 travels as uint16 bit patterns, e4m3 as uint8.
//   ba-gates:  x.npy uint16 [M, K_stride], weight.npy uint16 [N, K], a_log.npy and
//              dt_bias.npy float32 [N/2]; --vheads-per-group G -> gate_out.npy float32 [M, N]
//              (gates, then betas).
//   fp8-quant: x.npy uint16 [M, K] -> q.npy uint8 [M, K], scales.npy float32 [M, K/128].
// Exit 2: bad flags; exit 1: a bad input file (named) or a failing op.
#include <fmt/format.h>

#include <filesystem>
#include <memory>
#include <string>

#include "cli_support.hpp"
#include "metrale/error.hpp"
#include "npy_tensors.hpp"
#include "op_runner.hpp"

namespace metrale::cli {
namespace {

struct RunOptions {
  std::string in, out, target, kernel;
  std::uint32_t vheads_per_group = 0;
  bool pow2_scales = false;
};

std::filesystem::path prepare_out(const RunOptions& options) {
  std::error_code error;
  std::filesystem::create_directories(options.out, error);
  if (error) {
    throw UsageError(fmt::format("--out {}: cannot create it: {}", options.out, error.message()));
  }
  return options.out;
}

void report(Runtime& runtime, std::string_view op, std::string_view shape, const RanKernel& ran,
            std::string_view written) {
  std::fputs(fmt::format("{} {} on {} (target {}): ran {}{}\n  reason {}\nwrote {}\n", op, shape,
                         runtime.backend()->describe(), runtime.target().name, ran.kernel,
                         ran.twin ? " (the twin)" : "", ran.reject.value_or("none: the twin runs"), written)
                 .c_str(),
             stdout);
}

int run_ba_gates_files(const RunOptions& options) {
  const KernelChoice choice = parse_kernel_choice(options.kernel);
  const NpyArray x = read_tensor(options.in, "x.npy", NpyDtype::kUint16, 2);
  const NpyArray weight = read_tensor(options.in, "weight.npy", NpyDtype::kUint16, 2);
  const NpyArray a_log = read_tensor(options.in, "a_log.npy", NpyDtype::kFloat32, 1);
  const NpyArray dt_bias = read_tensor(options.in, "dt_bias.npy", NpyDtype::kFloat32, 1);
  const std::uint32_t m = dim(x, 0), k_stride = dim(x, 1), n = dim(weight, 0), k = dim(weight, 1);
  if (n % 2 != 0) {
    throw ArgumentError(fmt::format("weight.npy: N = {} is odd; the rows are nv gates and nv betas", n));
  }
  if (k_stride < k) {
    throw ArgumentError(fmt::format("x.npy: rows of {} elements are shorter than K = {} from weight.npy", k_stride, k));
  }
  const std::uint32_t nv = n / 2;
  const std::filesystem::path in(options.in);
  require_dim(a_log, (in / "a_log.npy").string(), 0, nv, "nv = N/2 from weight.npy");
  require_dim(dt_bias, (in / "dt_bias.npy").string(), 0, nv, "nv = N/2 from weight.npy");
  if (nv % options.vheads_per_group != 0) {
    throw UsageError(fmt::format("--vheads-per-group {} does not divide nv = {} (N/2 from weight.npy)",
                                 options.vheads_per_group, nv));
  }
  const std::filesystem::path out_dir = prepare_out(options);
  auto runtime = open_device_or_host(options.target);
  const BaGatesProblem problem{{m, n, k, k_stride, 2 * nv, nv, options.vheads_per_group},
                               tensor_values<std::uint16_t>(x),
                               tensor_values<std::uint16_t>(weight),
                               tensor_values<float>(a_log),
                               tensor_values<float>(dt_bias)};
  const BaGatesResult result = run_ba_gates(*runtime, problem, choice);
  const std::filesystem::path written = out_dir / "gate_out.npy";
  write_npy(written, make_tensor(NpyDtype::kFloat32, {m, std::uint64_t{2} * nv}, result.gate_out));
  report(*runtime, "ba-gates", fmt::format("M={} N={} K={} K_stride={}", m, n, k, k_stride), result.ran,
         written.string());
  return kDone;
}

int run_fp8_quant_files(const RunOptions& options) {
  const KernelChoice choice = parse_kernel_choice(options.kernel);
  const NpyArray x = read_tensor(options.in, "x.npy", NpyDtype::kUint16, 2);
  const std::uint32_t m = dim(x, 0), k = dim(x, 1);
  if (k % ops::kFp8QuantGroupSize != 0) {
    throw ArgumentError(
        fmt::format("x.npy: K = {} is not a multiple of the group size {}", k, ops::kFp8QuantGroupSize));
  }
  const std::filesystem::path out_dir = prepare_out(options);
  auto runtime = open_device_or_host(options.target);
  Fp8Problem problem{m, k, tensor_values<std::uint16_t>(x)};
  problem.scale_kind = options.pow2_scales ? ops::Fp8ScaleKind::kPow2 : ops::Fp8ScaleKind::kFp32;
  const Fp8Result result = run_fp8_quant(*runtime, problem, choice);
  write_npy(out_dir / "q.npy", make_tensor(NpyDtype::kUint8, {m, k}, result.q));
  write_npy(out_dir / "scales.npy", make_tensor(NpyDtype::kFloat32, {m, k / ops::kFp8QuantGroupSize}, result.scales));
  report(*runtime, "fp8-quant", fmt::format("M={} K={}", m, k), result.ran,
         fmt::format("{} and {}", (out_dir / "q.npy").string(), (out_dir / "scales.npy").string()));
  return kDone;
}

CLI::App* add_op(CLI::App* run, RunOptions& options, const char* name, const char* description,
                 std::vector<std::string> kernels) {
  auto* command = run->add_subcommand(name, description);
  command->add_option("--in", options.in, "Folder holding the input .npy files")
      ->required()
      ->check(CLI::ExistingDirectory);
  command->add_option("--out", options.out, "Folder for the output .npy files (created)")->required();
  command->add_option("--target", options.target, "Target (default: the device's, else hopper)");
  command->add_option("--kernel", options.kernel, "Force one kernel instead of the guard's pick")
      ->check(CLI::IsMember(std::move(kernels)));
  return command;
}

void setup_run(CLI::App& app, CommandContext& context) {
  auto* run = app.add_subcommand("run", "Run an op on .npy tensors (device, else host backend); write .npy outputs");
  run->require_subcommand(1);
  auto options = std::make_shared<RunOptions>();
  auto* ba = add_op(run, *options, "ba-gates", "SSM BA gates: x, weight, a_log, dt_bias -> gate_out",
                    {"twin", "parent", "mma"});
  ba->add_option("--vheads-per-group", options->vheads_per_group, "Value heads per group (3 for Qwen3.5-27B)")
      ->required()
      ->check(CLI::PositiveNumber);
  ba->footer(
      "Reads x.npy uint16 [M, K_stride] (bf16 bits), weight.npy uint16 [N, K], a_log.npy and dt_bias.npy\n"
      "float32 [N/2]; writes gate_out.npy float32 [M, N] (nv gates, then nv betas).\n"
      "Exit 0 done, 1 a bad input file or a failing op, 2 bad usage.");
  ba->callback([options, &context] { run_command(context, [&] { return run_ba_gates_files(*options); }); });
  auto* fp8 = add_op(run, *options, "fp8-quant", "Per-token-group FP8 quant: x -> q, scales", {"twin", "shared"});
  fp8->add_flag("--pow2-scales", options->pow2_scales, "Round scales up to powers of two (UE8M0)");
  fp8->footer(
      "Reads x.npy uint16 [M, K] (bf16 bits, K % 128 == 0); writes q.npy uint8 [M, K] (e4m3fn codes)\n"
      "and scales.npy float32 [M, K/128].\n"
      "Exit 0 done, 1 a bad input file or a failing op, 2 bad usage.");
  fp8->callback([options, &context] { run_command(context, [&] { return run_fp8_quant_files(*options); }); });
}

const CommandRegistration kRun{"run", setup_run};

}  // namespace
}  // namespace metrale::cli
