// run_roundtrip.cpp: checks `metrale-jit run` from outside the binary: writes random .npy
// inputs (never zeros), runs each op with the guard's pick and each kernel forced, and
// compares the .npy outputs with the CPU references (BA within 1e-5 relative, FP8 and SiLU-mul
// FP8 exact);
// then feeds malformed inputs and expects exit 1 with the offending file named.
// Usage: run_roundtrip <metrale-jit> <work dir>. The work dir is wiped first and holds the cache.
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "cli_process.hpp"
#include "ground/npy.hpp"
#include "ops/fp8_act_quant/fp8_act_quant.hpp"
#include "ops/silu_mul_fp8_quant/silu_mul_fp8_quant.hpp"
#include "ops/ssm_ba_gates/ssm_ba_gates.hpp"
#include "ref/bf16.hpp"

namespace fs = std::filesystem;
using metrale::NpyArray;
using metrale::NpyDtype;
using metrale::cli_test::Checks;
using metrale::cli_test::quoted;
using metrale::cli_test::Ran;
using metrale::cli_test::run_shell;

namespace {

template <typename T>
void write_tensor(const fs::path& path, NpyDtype dtype, std::vector<std::uint64_t> shape,
                  const std::vector<T>& values) {
  NpyArray array{dtype, std::move(shape), std::vector<std::byte>(values.size() * sizeof(T))};
  std::memcpy(array.data.data(), values.data(), array.data.size());
  metrale::write_npy(path, array);
}

template <typename T>
std::vector<T> read_tensor(const fs::path& path, NpyDtype dtype, const std::vector<std::uint64_t>& shape) {
  const NpyArray array = metrale::read_npy(path);
  if (array.dtype != dtype || array.shape != shape) {
    throw std::runtime_error(fmt::format("{}: dtype {} shape [{}], expected {} [{}]", path.string(),
                                         metrale::to_string(array.dtype), fmt::join(array.shape, ", "),
                                         metrale::to_string(dtype), fmt::join(shape, ", ")));
  }
  std::vector<T> values(array.data.size() / sizeof(T));
  std::memcpy(values.data(), array.data.data(), array.data.size());
  return values;
}

struct Cli {
  std::string binary;
  fs::path work;
  [[nodiscard]] Ran operator()(const std::string& args) const {
    return run_shell(
        fmt::format("METRALE_CACHE_DIR={} {} {} 2>&1", quoted((work / "cache").string()), quoted(binary), args));
  }
};

void check_ba_gates(Checks& checks, const Cli& cli) {
  // K_stride > K: the rows carry padding the op must skip.
  const std::uint32_t m = 3, n = 96, k = 512, k_stride = 520, nv = 48, vpg = 3;
  const fs::path in = cli.work / "ba_in";
  fs::create_directories(in);
  const auto x = metrale::ref::random_bf16(std::size_t{m} * k_stride, 7);
  const auto weight = metrale::ref::random_bf16(std::size_t{n} * k, 8, 0.05f);
  const auto a_log = metrale::ref::random_floats(nv, 9, -1.0f, 1.0f);
  const auto dt_bias = metrale::ref::random_floats(nv, 10, -1.0f, 1.0f);
  write_tensor(in / "x.npy", NpyDtype::kUint16, {m, k_stride}, x);
  write_tensor(in / "weight.npy", NpyDtype::kUint16, {n, k}, weight);
  write_tensor(in / "a_log.npy", NpyDtype::kFloat32, {nv}, a_log);
  write_tensor(in / "dt_bias.npy", NpyDtype::kFloat32, {nv}, dt_bias);
  std::vector<float> expected(std::size_t{m} * 2 * nv, 0.0f);
  metrale::ref::ssm_ba_gates_reference({x, weight, a_log, dt_bias}, {m, n, k, k_stride, 2 * nv, nv, vpg}, expected);
  // mma: another summation order, still within 1e-5 of the kernel-order reference per element here.
  for (const std::string kernel : {"", "twin", "parent", "mma"}) {
    const fs::path out = cli.work / ("ba_out_" + (kernel.empty() ? std::string("guard") : kernel));
    const Ran ran = cli(fmt::format("run ba-gates --in {} --out {} --vheads-per-group {}{}", quoted(in.string()),
                                    quoted(out.string()), vpg, kernel.empty() ? "" : " --kernel " + kernel));
    checks.expect(ran.exit_code == 0, fmt::format("run ba-gates {} exits 0: {}", kernel, ran.output));
    if (ran.exit_code != 0) {
      continue;
    }
    const auto got = read_tensor<float>(out / "gate_out.npy", NpyDtype::kFloat32, {m, 2 * nv});
    std::size_t bad = 0;
    for (std::size_t i = 0; i < expected.size(); ++i) {
      bad += !(std::abs(got[i] - expected[i]) <= 1e-5f * std::abs(expected[i])) ? 1 : 0;
    }
    checks.expect(bad == 0, fmt::format("run ba-gates {}: {} of {} outputs differ from the reference", kernel, bad,
                                        expected.size()));
  }
  // b300 ships no twin: forcing it is bad usage, not a silent fallback to the parent.
  const Ran forced = cli(fmt::format("run ba-gates --in {} --out {} --vheads-per-group {} --target b300 --kernel twin",
                                     quoted(in.string()), quoted((cli.work / "ba_out_b300").string()), vpg));
  checks.expect(forced.exit_code == 2 && forced.output.find("does not ship") != std::string::npos,
                fmt::format("forcing the twin on b300 exits 2 (got {}): {}", forced.exit_code, forced.output));
  // generic ships no tensor-core kernel.
  const Ran no_mma =
      cli(fmt::format("run ba-gates --in {} --out {} --vheads-per-group {} --target generic --kernel mma",
                      quoted(in.string()), quoted((cli.work / "ba_out_generic").string()), vpg));
  checks.expect(no_mma.exit_code == 2 && no_mma.output.find("does not ship") != std::string::npos,
                fmt::format("forcing mma on generic exits 2 (got {}): {}", no_mma.exit_code, no_mma.output));
}

void check_fp8_quant(Checks& checks, const Cli& cli) {
  const std::uint32_t m = 4, k = 1024;
  const fs::path in = cli.work / "fp8_in";
  fs::create_directories(in);
  const auto x = metrale::ref::random_bf16(std::size_t{m} * k, 11, 6.0f);
  write_tensor(in / "x.npy", NpyDtype::kUint16, {m, k}, x);
  for (const bool pow2 : {false, true}) {
    const auto expected = metrale::ref::fp8_act_quant_reference(x, {m, k, k, pow2});
    for (const std::string kernel : {"", "twin", "shared"}) {
      const std::string label = fmt::format("run fp8-quant {}{}", kernel, pow2 ? " --pow2-scales" : "");
      const fs::path out = cli.work / fmt::format("fp8_out_{}{}", kernel, pow2 ? "_pow2" : "");
      const Ran ran = cli(fmt::format("run fp8-quant --in {} --out {}{}{}", quoted(in.string()), quoted(out.string()),
                                      kernel.empty() ? "" : " --kernel " + kernel, pow2 ? " --pow2-scales" : ""));
      checks.expect(ran.exit_code == 0, label + " exits 0: " + ran.output);
      if (ran.exit_code != 0) {
        continue;
      }
      checks.expect(read_tensor<std::uint8_t>(out / "q.npy", NpyDtype::kUint8, {m, k}) == expected.q,
                    label + ": q equals the reference");
      checks.expect(read_tensor<float>(out / "scales.npy", NpyDtype::kFloat32, {m, k / 128}) == expected.scales,
                    label + ": scales equal the reference");
    }
  }
}

// The third op through the same generic run: gate.npy and up.npy in, q.npy and scales.npy out,
// K derived from the files (the row strides' zero means k), the parent's scratch allocated by the
// op; every kernel's bytes equal the CPU reference's, fp32 and power-of-two scales.
void check_silu_mul(Checks& checks, const Cli& cli) {
  const std::uint32_t m = 5, k = 384;
  const fs::path in = cli.work / "silu_in";
  fs::create_directories(in);
  const auto gate = metrale::ref::random_bf16(std::size_t{m} * k, 13, 4.0f);
  const auto up = metrale::ref::random_bf16(std::size_t{m} * k, 14, 4.0f);
  write_tensor(in / "gate.npy", NpyDtype::kUint16, {m, k}, gate);
  write_tensor(in / "up.npy", NpyDtype::kUint16, {m, k}, up);
  for (const bool pow2 : {false, true}) {
    const auto expected = metrale::ref::silu_mul_fp8_quant_reference(gate, up, {m, k, k, k, pow2});
    for (const std::string kernel : {"", "twin", "parent"}) {
      const std::string label = fmt::format("run silu_mul_fp8_quant {}{}", kernel, pow2 ? " pow2" : "");
      const fs::path out = cli.work / fmt::format("silu_out_{}{}", kernel, pow2 ? "_pow2" : "");
      const Ran ran =
          cli(fmt::format("run silu_mul_fp8_quant --in {} --out {}{}{}", quoted(in.string()), quoted(out.string()),
                          kernel.empty() ? "" : " --kernel " + kernel, pow2 ? " --set pow2_scales=1" : ""));
      checks.expect(ran.exit_code == 0, label + " exits 0: " + ran.output);
      if (ran.exit_code != 0) {
        continue;
      }
      checks.expect(read_tensor<std::uint8_t>(out / "q.npy", NpyDtype::kUint8, {m, k}) == expected.q,
                    label + ": q equals the reference");
      checks.expect(read_tensor<float>(out / "scales.npy", NpyDtype::kFloat32, {m, k / 128}) == expected.scales,
                    label + ": scales equal the reference");
    }
  }
}

void expect_bad_file(Checks& checks, const Cli& cli, const std::string& what, const fs::path& dir,
                     const std::string& op_args, const std::string& named) {
  const Ran ran = cli(
      fmt::format("run {} --in {} --out {}", op_args, quoted(dir.string()), quoted((cli.work / "bad_out").string())));
  checks.expect(ran.exit_code == 1, fmt::format("{}: exit 1 (got {}): {}", what, ran.exit_code, ran.output));
  checks.expect(ran.output.find(named) != std::string::npos, fmt::format("{}: names {}: {}", what, named, ran.output));
}

void check_bad_inputs(Checks& checks, const Cli& cli) {
  const fs::path garbage = cli.work / "garbage";
  fs::create_directories(garbage);
  // A valid file cut inside its header.
  write_tensor(garbage / "x.npy", NpyDtype::kUint16, {2, 128}, metrale::ref::random_bf16(256, 2));
  fs::resize_file(garbage / "x.npy", 40);
  expect_bad_file(checks, cli, "a truncated x.npy", garbage, "fp8-quant", "x.npy");

  const fs::path wrong_dtype = cli.work / "wrong_dtype";
  fs::create_directories(wrong_dtype);
  write_tensor(wrong_dtype / "x.npy", NpyDtype::kFloat32, {2, 128}, std::vector<float>(256, 1.5f));
  expect_bad_file(checks, cli, "a float32 x.npy", wrong_dtype, "fp8-quant", "x.npy");

  const fs::path bad_k = cli.work / "bad_k";
  fs::create_directories(bad_k);
  write_tensor(bad_k / "x.npy", NpyDtype::kUint16, {2, 100}, metrale::ref::random_bf16(200, 3));
  expect_bad_file(checks, cli, "K = 100 for fp8-quant", bad_k, "fp8-quant", "multiple of");

  // ba-gates with a_log one element short: the message names a_log.npy.
  const fs::path short_a_log = cli.work / "short_a_log";
  fs::copy(cli.work / "ba_in", short_a_log, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  write_tensor(short_a_log / "a_log.npy", NpyDtype::kFloat32, {47}, metrale::ref::random_floats(47, 4, -1.0f, 1.0f));
  expect_bad_file(checks, cli, "a_log.npy of 47 for nv = 48", short_a_log, "ba-gates --vheads-per-group 3",
                  "a_log.npy");

  const fs::path missing = cli.work / "missing";
  fs::create_directories(missing);
  expect_bad_file(checks, cli, "an empty input folder", missing, "ba-gates --vheads-per-group 3", "x.npy");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: run_roundtrip <metrale-jit> <work dir>\n");
    return 2;
  }
  const Cli cli{argv[1], argv[2]};
  fs::remove_all(cli.work);
  fs::create_directories(cli.work);
  Checks checks;
  try {
    check_ba_gates(checks, cli);
    check_fp8_quant(checks, cli);
    check_silu_mul(checks, cli);
    check_bad_inputs(checks, cli);
  } catch (const std::exception& error) {
    checks.expect(false, std::string("unexpected error: ") + error.what());
  }
  return checks.finish("run_roundtrip");
}
