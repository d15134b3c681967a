// Runtime::tune and a runtime reading a tuning table, on the host backend (README "Tuning tables"):
// the table tune writes has its provenance, kernel keys and one timing per ladder M; written and
// read back it is accepted, its thresholds are what the guards hold M to (an FP8 call under the
// predicted floor runs the twin once a table says the twin wins there, and explain names the file
// and row), and a table from another SM count, device or kernel is refused by name with the
// prediction kept; an edited file is a ConfigError.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "metrale/error.hpp"
#include "metrale/ops/fp8_act_quant.hpp"
#include "metrale/ops/tuning_table.hpp"
#include "metrale/runtime.hpp"
#include "ops/fp8_act_quant/fp8_act_quant.hpp"
#include "ref/bf16.hpp"
#include "support/isolated_runtime.hpp"
#include "support/temp_dir.hpp"

using namespace metrale;

namespace {

constexpr std::uint32_t kSmCount = 8;
constexpr std::uint32_t kK = 1024;
constexpr std::uint8_t kPoisonCode = 0xAB;

RuntimeOptions host_options(std::optional<std::string> table = std::nullopt) {
  RuntimeOptions options = test::isolated_runtime_options(BackendChoice::kHost, kSmCount);
  options.levers = {{"fp8_act_quant_hopper", true}};
  options.tuning_table = std::move(table);
  return options;
}

// A table measured on this runtime's device and kernels: FP8 only, a short ladder.
ops::TuningTable measured(Runtime& runtime) {
  TuneRequest request;
  request.ops = {"fp8_act_quant"};
  request.m = {1, 2, 4};
  request.k = {kK};
  request.repeats = 3;
  return runtime.tune(request);
}

std::string write_file(const test::TempDir& dir, const std::string& name, const ops::TuningTable& table) {
  const std::string path = (dir.path() / name).string();
  std::ofstream(path) << ops::write_tuning_table(table);
  return path;
}

// Sets the row's timings so the rule gives `from` (nullopt: the role never wins).
void wins_from(ops::TuningRow& row, std::optional<std::uint32_t> from) {
  for (ops::TuningTiming& timing : row.timings) {
    timing.parent_us = 10.0 + timing.m;
    timing.role_us = (from && timing.m >= *from) ? 5.0 + timing.m * 0.5 : 20.0 + timing.m;
  }
  row.min_m = from;
}

// One FP8 call at M = 3 on random inputs, poisoned output; returns whether the twin ran, checking
// the bytes against the reference either way.
bool twin_runs_at_three(Runtime& runtime) {
  constexpr std::uint32_t m = 3;
  GpuBackend& gpu = *runtime.backend();
  const std::vector<std::uint16_t> x = ref::random_bf16(std::size_t{m} * kK, 71, 4.0f);
  const std::vector<std::uint8_t> q_poison(std::size_t{m} * kK, kPoisonCode);
  const std::vector<float> scales_poison(std::size_t{m} * (kK / 128), -7.0f);
  const ops::Fp8QuantArgs args{
      test::upload(gpu, x), test::upload(gpu, q_poison), test::upload(gpu, scales_poison), m, kK, kK};
  const ops::Fp8QuantPick pick = ops::fp8_act_quant(runtime, args);
  std::vector<std::uint8_t> q(q_poison.size());
  gpu.copy_to_host(q.data(), args.q, q.size());
  CHECK(q == ref::fp8_act_quant_reference(x, {m, kK, kK, false}).q);
  return pick.twin;
}

const ops::RoleExplanation& twin_row(const ops::Explanation& explanation) {
  for (const ops::RoleExplanation& row : explanation.roles) {
    if (row.role == "twin") {
      return row;
    }
  }
  FAIL("no twin row");
  return explanation.roles.front();
}

ops::Explanation explain_at_k(const Runtime& runtime) {
  const std::vector<ops::NamedArg> shape{{"k", kK}};
  return runtime.explain("fp8_act_quant", shape, false);
}

}  // namespace

TEST_CASE("tune measures each guarded role against its parent with its provenance and kernel keys", "[runtime][tune]") {
  auto runtime = Runtime::open(host_options());
  const ops::TuningTable table = measured(*runtime);
  CHECK(table.provenance.backend == "host");
  CHECK(table.provenance.sm_count == kSmCount);
  CHECK(table.provenance.device_name == runtime->backend()->device_name());
  CHECK(table.provenance.nvrtc == "none");
  CHECK(table.provenance.repeats == 3);
  CHECK(table.provenance.date.size() == 20);  // 2026-12-06T03:10:00Z
  REQUIRE(table.rows.size() == 1);
  const ops::TuningRow& row = table.rows.front();
  CHECK(row.op == "fp8_act_quant");
  CHECK(row.role == "twin");
  CHECK(row.n == 0);
  CHECK(row.k == kK);
  CHECK(row.role_kernel_key.size() == 32);
  REQUIRE(row.parent_kernel_keys.size() == 1);
  CHECK(row.parent_kernel_keys.front() != row.role_kernel_key);
  REQUIRE(row.timings.size() == 3);
  for (const ops::TuningTiming& timing : row.timings) {
    CHECK(timing.parent_us > 0);
    CHECK(timing.role_us > 0);
  }
  CHECK(row.min_m == ops::measured_min_m(row.timings));
  // The prediction is the guard's own: what explain says with no table.
  CHECK(row.predicted_min_m == twin_row(explain_at_k(*runtime)).min_m);
  TuneRequest zero_m;
  zero_m.m = {0, 4};
  CHECK_THROWS_WITH(runtime->tune(zero_m), Catch::Contains("every M of the ladder"));
}

TEST_CASE("a tuning table's thresholds are what the guards hold M to, and explain names its file and row",
          "[runtime][tune]") {
  const test::TempDir dir("metrale-tune");
  auto plain = Runtime::open(host_options());
  ops::TuningTable table = measured(*plain);
  const std::optional<std::uint32_t> predicted = twin_row(explain_at_k(*plain)).min_m;
  REQUIRE(predicted);
  REQUIRE(*predicted > 3);  // the prediction refuses the twin at M = 3 ...
  CHECK_FALSE(twin_runs_at_three(*plain));
  CHECK(twin_row(explain_at_k(*plain)).threshold_origin == "prediction");

  wins_from(table.rows.front(), 2);  // ... the table says it wins from M = 2
  const std::string path = write_file(dir, "wins.toml", table);
  auto tuned = Runtime::open(host_options(path));
  INFO(tuned->tuning_status());
  REQUIRE(tuned->tuning_table() != nullptr);
  CHECK(tuned->tuning_status().find("1 row in use") != std::string::npos);
  CHECK(twin_runs_at_three(*tuned));
  const ops::RoleExplanation row = twin_row(explain_at_k(*tuned));
  CHECK(row.min_m == 2U);
  CHECK(row.threshold_origin.find(path + ", row 1") != std::string::npos);
  CHECK(row.threshold_origin.find(fmt::format("predicted M >= {}", *predicted)) != std::string::npos);

  wins_from(table.rows.front(), std::nullopt);  // never: refused at every M, explain says why
  auto never = Runtime::open(host_options(write_file(dir, "never.toml", table)));
  REQUIRE(never->tuning_table() != nullptr);
  CHECK_FALSE(twin_runs_at_three(*never));
  const ops::RoleExplanation never_row = twin_row(explain_at_k(*never));
  CHECK_FALSE(never_row.min_m.has_value());
  CHECK(never_row.min_reason.value_or("").find("slower than its parent up to M = 4") != std::string::npos);
}

TEST_CASE("a tuning table from another SM count, device or kernel is refused by name and the prediction stays",
          "[runtime][tune]") {
  const test::TempDir dir("metrale-tune");
  auto plain = Runtime::open(host_options());
  ops::TuningTable good = measured(*plain);
  wins_from(good.rows.front(), 1);
  struct Case {
    const char* name;
    std::function<void(ops::TuningTable&)> edit;
    const char* named;
  };
  const std::vector<Case> cases{
      {"sm", [](ops::TuningTable& t) { t.provenance.sm_count += 1; }, "SM count 9, this runtime has 8"},
      {"device", [](ops::TuningTable& t) { t.provenance.device_name = "NVIDIA H200"; }, "'NVIDIA H200'"},
      {"driver", [](ops::TuningTable& t) { t.provenance.driver = "580.65"; }, "driver 580.65"},
      {"kernel", [](ops::TuningTable& t) { t.rows.front().role_kernel_key = std::string(32, 'e'); },
       "row 1 (fp8_act_quant twin) was measured with kernel key eeee"},
      {"parent", [](ops::TuningTable& t) { t.rows.front().parent_kernel_keys.push_back(std::string(32, 'f')); },
       "parent kernel keys"},
      {"op", [](ops::TuningTable& t) { t.rows.front().op = "no_such_op"; }, "row 1 names no_such_op twin"},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.name) {
      ops::TuningTable table = good;
      c.edit(table);
      auto runtime = Runtime::open(host_options(write_file(dir, std::string(c.name) + ".toml", table)));
      INFO(runtime->tuning_status());
      CHECK(runtime->tuning_table() == nullptr);
      CHECK(runtime->tuning_status().find("refused") != std::string::npos);
      CHECK(runtime->tuning_status().find(c.named) != std::string::npos);
      CHECK_FALSE(twin_runs_at_three(*runtime));  // the prediction's floor, not the table's M >= 1
      CHECK(twin_row(explain_at_k(*runtime)).threshold_origin.find("refused") != std::string::npos);
    }
  }
  // The same table unedited is taken (the cases above fail for their edit alone).
  auto accepted = Runtime::open(host_options(write_file(dir, "good.toml", good)));
  CHECK(accepted->tuning_table() != nullptr);
  CHECK(twin_runs_at_three(*accepted));
}

TEST_CASE("a tuning table edited by hand, or named and missing, is a ConfigError at open", "[runtime][tune]") {
  const test::TempDir dir("metrale-tune");
  auto plain = Runtime::open(host_options());
  const std::string path = write_file(dir, "t.toml", measured(*plain));
  std::string text;
  {
    std::ifstream in(path);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  const std::size_t at = text.find("role_us = ");
  REQUIRE(at != std::string::npos);
  text.insert(at + 10, "9");  // one timing made larger
  std::ofstream(path) << text;
  CHECK_THROWS_WITH(Runtime::open(host_options(path)), Catch::Contains("edited"));
  CHECK_THROWS_AS(Runtime::open(host_options((dir.path() / "absent.toml").string())), ConfigError);
  // The variable names a table as the option does.
  RuntimeOptions options = host_options();
  options.env = [&](const char* name) -> std::optional<std::string> {
    return std::string_view(name) == "METRALE_TUNING_TABLE" ? std::optional<std::string>(path) : std::nullopt;
  };
  CHECK_THROWS_WITH(Runtime::open(options), Catch::Contains("edited"));
}
