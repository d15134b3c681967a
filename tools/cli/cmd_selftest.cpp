// cmd_selftest.cpp: `metrale-jit selftest [--target NAME] [--json]`: every op on the device
// (or the host backend without one) against its CPU reference at the Qwen3.5-27B shapes,
// with the guard's pick and each kernel forced, outputs poisoned first; twin and parent
// (shared) outputs must be byte-equal. Prints a pass/fail table; exit 1 on any failure.
// A forced kernel the target does not ship is a SKIP row, not a failure.
// Tolerances: BA within 1e-5 relative of the reference (which keeps the kernels' order, so
// on the host backend it is bit-exact); the BA tensor-core kernel (another summation order)
// within 1e-5 relative Frobenius error of the float64 oracle, on N(0,1) activations and
// 0.02 N(0,1) weights; FP8 codes and scales exact.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli_support.hpp"
#include "metrale/error.hpp"
#include "op_runner.hpp"
#include "ops/op_kernels.hpp"
#include "ref/bf16.hpp"
#include "ref/fp8_act_quant_ref.hpp"

namespace metrale::cli {
namespace {

constexpr double kBaRelTolerance = 1e-5;

struct SelftestOptions {
  std::string target;
  bool json = false;
};

struct Row {
  std::string name, kernel, status, detail;
  double ms = 0.0;
};

bool same_bytes(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class Selftest {
 public:
  explicit Selftest(Runtime& runtime) : runtime_(runtime) {}

  void ba_gates_at(std::uint32_t m) {
    const std::uint32_t n = 96, k = 5120, nv = 48, vpg = 3;
    const BaGatesProblem problem{{m, n, k, k, 2 * nv, nv, vpg},
                                 ref::random_bf16(static_cast<std::size_t>(m) * k, 101 + m),
                                 ref::random_bf16(static_cast<std::size_t>(n) * k, 202 + m, 0.05f),
                                 ref::random_floats(nv, 303 + m, -1.0f, 1.0f),
                                 ref::random_floats(nv, 404 + m, -1.0f, 1.0f)};
    std::vector<float> expected(static_cast<std::size_t>(m) * 2 * nv, 0.0f);
    ref::ssm_ba_gates_reference({problem.x, problem.weight, problem.a_log, problem.dt_bias}, problem.shape, expected);
    auto guard = ba_case(fmt::format("ba-gates M={} K={}", m, k), problem, expected, KernelChoice::kGuard);
    // The seeds' byte parity is between the twin and the parent: when the guard picked the
    // tensor-core kernel (its own check is against the oracle), both seed kernels are forced.
    if (guard && guard->ran.kernel == ops::kBaGatesMmaKernel) {
      guard = ba_case(fmt::format("ba-gates M={} --kernel twin", m), problem, expected, KernelChoice::kTwin);
    }
    const bool guard_twin = guard && guard->ran.twin;
    const KernelChoice other = guard_twin ? KernelChoice::kParent : KernelChoice::kTwin;
    const auto forced =
        ba_case(fmt::format("ba-gates M={} --kernel {}", m, guard_twin ? "parent" : "twin"), problem, expected, other);
    if (guard && forced) {
      bytes_equal(fmt::format("ba-gates M={} twin == parent bytes", m), same_bytes(guard->gate_out, forced->gate_out));
    }
  }

  // The tensor-core kernel forced, against the float64 oracle (gate_out is dense: [m][2 nv]).
  void ba_gates_mma_at(std::uint32_t m) {
    const std::uint32_t n = 96, k = 5120, nv = 48, vpg = 3;
    const BaGatesProblem problem{{m, n, k, k, 2 * nv, nv, vpg},
                                 ref::random_normal_bf16(static_cast<std::size_t>(m) * k, 111 + m, 1.0f),
                                 ref::random_normal_bf16(static_cast<std::size_t>(n) * k, 212 + m, 0.02f),
                                 ref::random_floats(nv, 313 + m, -1.0f, 1.0f),
                                 ref::random_floats(nv, 414 + m, -1.0f, 1.0f)};
    const std::vector<double> oracle =
        ref::ssm_ba_gates_oracle({problem.x, problem.weight, problem.a_log, problem.dt_bias}, problem.shape);
    const std::string name = fmt::format("ba-gates M={} --kernel mma", m);
    auto result = attempt<BaGatesResult>(name, [&] { return run_ba_gates(runtime_, problem, KernelChoice::kMma); });
    if (!result) {
      return;
    }
    double diff = 0.0, norm = 0.0;
    for (std::size_t i = 0; i < oracle.size(); ++i) {
      const double got = result->gate_out[i];
      diff += (got - oracle[i]) * (got - oracle[i]);
      norm += oracle[i] * oracle[i];
    }
    const double error = std::sqrt(diff / norm);  // NaN (unwritten poison) fails below
    add_row(name, result->ran, error < kBaRelTolerance,
            fmt::format("relative Frobenius error vs float64 oracle {:.3g} (bound {:g})", error, kBaRelTolerance));
  }

  void fp8_at(std::uint32_t m, std::uint32_t k, bool column_major_pow2) {
    Fp8Problem problem{m, k, ref::random_bf16(static_cast<std::size_t>(m) * k, 505 + m + k, 4.0f)};
    std::string label = fmt::format("fp8-quant M={} K={}", m, k);
    if (column_major_pow2) {
      problem.layout = ops::Fp8ScaleLayout::kColumnMajor;
      problem.m_aligned = (m + 3) / 4 * 4;
      problem.scale_kind = ops::Fp8ScaleKind::kPow2;
      label += " col-major pow2";
    }
    const auto expected = ref::fp8_act_quant_reference(problem.x, {m, k, k, column_major_pow2});
    const auto guard = fp8_case(label, problem, expected, KernelChoice::kGuard);
    const bool guard_twin = guard && guard->ran.twin;
    const auto forced = fp8_case(label + (guard_twin ? " --kernel shared" : " --kernel twin"), problem, expected,
                                 guard_twin ? KernelChoice::kParent : KernelChoice::kTwin);
    if (guard && forced) {
      bytes_equal(label + " twin == shared bytes", guard->q == forced->q && same_bytes(guard->scales, forced->scales));
    }
  }

  [[nodiscard]] const std::vector<Row>& rows() const { return rows_; }

 private:
  template <typename Run>
  auto timed(Run&& run) {
    const auto start = std::chrono::steady_clock::now();
    auto result = run();
    last_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return result;
  }

  // Runs one case; nullopt (and a SKIP row) when the forced kernel is not shipped.
  template <typename Result, typename Run>
  std::optional<Result> attempt(const std::string& name, Run&& run) {
    try {
      return timed(run);
    } catch (const UsageError& skipped) {
      rows_.push_back({name, "-", "SKIP", skipped.what(), 0.0});
    } catch (const Error& failed) {
      rows_.push_back({name, "-", "FAIL", failed.what(), 0.0});
    }
    return std::nullopt;
  }

  std::optional<BaGatesResult> ba_case(const std::string& name, const BaGatesProblem& problem,
                                       const std::vector<float>& expected, KernelChoice choice) {
    auto result = attempt<BaGatesResult>(name, [&] { return run_ba_gates(runtime_, problem, choice); });
    if (!result) {
      return result;
    }
    std::size_t bad = 0;
    double worst = 0.0;
    for (std::size_t i = 0; i < expected.size(); ++i) {
      const double got = result->gate_out[i], want = expected[i];
      const double rel = std::abs(got - want) / std::max(std::abs(want), 1e-30);
      bad += (std::isnan(got) || rel > kBaRelTolerance) ? 1 : 0;
      worst = std::isnan(got) ? worst : std::max(worst, rel);
    }
    const bool exact = std::memcmp(result->gate_out.data(), expected.data(), expected.size() * sizeof(float)) == 0;
    add_row(name, result->ran, bad == 0,
            exact ? "bit-exact vs reference"
                  : fmt::format("{} of {} off by > {:g} rel; max rel {:.3g}", bad, expected.size(), kBaRelTolerance,
                                worst));
    return result;
  }

  std::optional<Fp8Result> fp8_case(const std::string& name, const Fp8Problem& problem,
                                    const ref::Fp8RefResult& expected, KernelChoice choice) {
    auto result = attempt<Fp8Result>(name, [&] { return run_fp8_quant(runtime_, problem, choice); });
    if (!result) {
      return result;
    }
    std::size_t bad_codes = 0, bad_scales = 0;
    for (std::size_t i = 0; i < expected.q.size(); ++i) {
      bad_codes += result->q[i] != expected.q[i] ? 1 : 0;
    }
    const std::uint32_t groups = problem.k / ops::kFp8QuantGroupSize;
    for (std::uint32_t t = 0; t < problem.m; ++t) {
      for (std::uint32_t g = 0; g < groups; ++g) {
        const float got = fp8_scale_at(problem, *result, t, g);
        const float* want = &expected.scales[t * groups + g];
        // Bytes, not values: the kernels must reproduce the reference's scales exactly.
        // NOLINTNEXTLINE(bugprone-suspicious-memory-comparison)
        bad_scales += std::memcmp(&got, want, sizeof(float)) != 0 ? 1 : 0;
      }
    }
    add_row(name, result->ran, bad_codes == 0 && bad_scales == 0,
            fmt::format("{} codes, {} scales differ from the reference", bad_codes, bad_scales));
    return result;
  }

  void bytes_equal(const std::string& name, bool same) {
    rows_.push_back({name, "-", same ? "PASS" : "FAIL", same ? "identical" : "outputs differ", 0.0});
  }

  void add_row(const std::string& name, const RanKernel& ran, bool pass, std::string detail) {
    rows_.push_back({name, ran.kernel, pass ? "PASS" : "FAIL", std::move(detail), last_ms_});
  }

  Runtime& runtime_;
  std::vector<Row> rows_;
  double last_ms_ = 0.0;
};

int selftest(const SelftestOptions& options) {
  auto runtime = open_device_or_host(options.target);
  Selftest test(*runtime);
  test.ba_gates_at(264);
  test.ba_gates_at(7);
  test.ba_gates_mma_at(264);
  test.fp8_at(53, 5120, false);
  test.fp8_at(52, 5120, false);
  test.fp8_at(6, 1024, true);
  std::size_t failed = 0;
  for (const auto& row : test.rows()) {
    failed += row.status == "FAIL" ? 1 : 0;
  }
  const std::string where = fmt::format("{} (target {})", runtime->backend()->describe(), runtime->target().name);
  if (options.json) {
    nlohmann::json cases = nlohmann::json::array();
    for (const auto& row : test.rows()) {
      cases.push_back(
          {{"case", row.name}, {"kernel", row.kernel}, {"result", row.status}, {"detail", row.detail}, {"ms", row.ms}});
    }
    const nlohmann::json out = {{"backend", where}, {"failed", failed}, {"cases", cases}};
    std::fputs((out.dump(2) + "\n").c_str(), stdout);
  } else {
    TextTable table({{"case"}, {"kernel"}, {"result"}, {"ms", true}, {"detail"}});
    for (const auto& row : test.rows()) {
      table.add_row({row.name, row.kernel, row.status, row.ms > 0 ? fmt::format("{:.0f}", row.ms) : "", row.detail});
    }
    std::fputs(
        fmt::format("selftest on {}\n{}{} checks, {} failed\n", where, table.render(), test.rows().size(), failed)
            .c_str(),
        stdout);
  }
  return failed == 0 ? kDone : kFailed;
}

void setup_selftest(CLI::App& app, CommandContext& context) {
  auto* command = app.add_subcommand(
      "selftest", "Check every op against its reference at the Qwen3.5-27B shapes (device, else host backend)");
  auto options = std::make_shared<SelftestOptions>();
  command->add_option("--target", options->target, "Target (default: the device's, else hopper)");
  command->add_flag("--json", options->json, "Print JSON instead of a table");
  command->callback([options, &context] { run_command(context, [&] { return selftest(*options); }); });
}

const CommandRegistration kSelftest{"selftest", setup_selftest};

}  // namespace
}  // namespace metrale::cli
