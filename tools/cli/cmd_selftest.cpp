// cmd_selftest.cpp: `metrale-jit selftest [--target NAME] [--op NAME ...] [--role ROLE] [--quick]
// [--json] [--ops FILE]`: every declared op's check hook (OpDeclaration::check) on the device, or
// the host backend without one: each role forced, outputs poisoned first, twins byte-equal to their
// parent, other kernels against a reference within the op's bound. Full shapes (the ops'
// production shapes, Qwen3.5-27B for the library's) unless --quick. Prints a table (or JSON);
// exit 1 on any failure. A role whose kernel the target does not ship is a SKIP row, not a failure;
// an op without a check hook is one SKIP row saying so.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_support.hpp"
#include "metrale/error.hpp"
#include "op_plugins.hpp"
#include "op_runtime.hpp"

namespace metrale::cli {
namespace {

struct SelftestOptions {
  std::string target;
  std::vector<std::string> ops;
  std::string role;
  bool quick = false;
  bool json = false;
};

struct Row {
  std::string op;
  ops::CheckResult result;
};

std::string_view status(ops::CheckVerdict verdict) {
  switch (verdict) {
    case ops::CheckVerdict::kPassed:
      return "PASS";
    case ops::CheckVerdict::kFailed:
      return "FAIL";
    case ops::CheckVerdict::kSkipped:
      break;
  }
  return "SKIP";
}

std::vector<Row> run_checks(const Runtime& runtime, const SelftestOptions& options) {
  std::vector<const ops::OpDeclaration*> chosen;
  for (const std::string& name : options.ops) {
    chosen.push_back(&require_op(runtime.ops(), name));
  }
  if (chosen.empty()) {
    for (const ops::OpDeclaration& op : runtime.ops().ops()) {
      chosen.push_back(&op);
    }
  }
  if (!options.role.empty() && std::none_of(chosen.begin(), chosen.end(), [&](const ops::OpDeclaration* op) {
        return op->role_index(options.role).has_value();
      })) {
    throw UsageError(fmt::format("--role {}: no op checked here has that role", options.role));
  }
  std::vector<Row> rows;
  for (const ops::OpDeclaration* op : chosen) {
    if (!op->check) {
      ops::CheckResult none;
      none.worst = "the op declares no check";
      rows.push_back({op->name, std::move(none)});
      continue;
    }
    ops::CheckOptions check;
    check.full_shapes = !options.quick;
    std::string role;
    if (!options.role.empty()) {
      if (!op->role_index(options.role)) {
        continue;  // --role names a role of another op
      }
      role = std::string(require_role(*op, options.role, "--role"));
      check.role = role;
    }
    try {
      for (ops::CheckResult& result : op->check(runtime.op_context(op->name), check)) {
        rows.push_back({op->name, std::move(result)});
      }
    } catch (const Error& error) {  // a check that cannot finish is that op's failure, not the run's
      ops::CheckResult failed;
      failed.verdict = ops::CheckVerdict::kFailed;
      failed.worst = error.what();
      rows.push_back({op->name, std::move(failed)});
    }
  }
  return rows;
}

int selftest(const SelftestOptions& options) {
  auto runtime = open_device_or_host(options.target);
  const std::vector<Row> rows = run_checks(*runtime, options);
  std::size_t failed = 0;
  for (const Row& row : rows) {
    failed += row.result.verdict == ops::CheckVerdict::kFailed ? 1 : 0;
  }
  const std::string where = fmt::format("{} (target {})", runtime->backend()->describe(), runtime->target().name);
  if (options.json) {
    nlohmann::json cases = nlohmann::json::array();
    for (const Row& row : rows) {
      const ops::CheckResult& r = row.result;
      cases.push_back({{"op", row.op},
                       {"role", r.role},
                       {"kernel", r.kernel},
                       {"shape", r.shape},
                       {"check", r.check},
                       {"result", status(r.verdict)},
                       {"detail", r.worst},
                       {"ms", r.ms}});
    }
    const nlohmann::json out = {{"backend", where}, {"failed", failed}, {"cases", cases}};
    std::fputs((out.dump(2) + "\n").c_str(), stdout);
  } else {
    TextTable table({{"op"}, {"role"}, {"kernel"}, {"shape"}, {"check"}, {"result"}, {"ms", true}, {"detail"}});
    for (const Row& row : rows) {
      const ops::CheckResult& r = row.result;
      table.add_row({row.op, r.role.empty() ? "-" : r.role, r.kernel.empty() ? "-" : r.kernel, r.shape, r.check,
                     std::string(status(r.verdict)), r.ms > 0 ? fmt::format("{:.0f}", r.ms) : "", r.worst});
    }
    std::fputs(
        fmt::format("selftest on {}\n{}{} checks, {} failed\n", where, table.render(), rows.size(), failed).c_str(),
        stdout);
  }
  return failed == 0 ? kDone : kFailed;
}

void setup_selftest(CLI::App& app, CommandContext& context) {
  auto* command = app.add_subcommand(
      "selftest", "Check every op's kernels against their parent or reference (device, else host backend)");
  auto options = std::make_shared<SelftestOptions>();
  command->add_option("--target", options->target, "Target (default: the device's, else hopper)");
  command->add_option("--op", options->ops, "Check only this op (name or alias; repeatable)");
  command->add_option("--role", options->role, "Check only this role (parent, twin, mma, ...)");
  command->add_flag("--quick", options->quick, "Small shapes that still cover every path, not the production ones");
  command->add_flag("--json", options->json, "Print JSON instead of a table");
  add_ops_option(command);
  command->callback([options, &context] { run_command(context, [&] { return selftest(*options); }); });
}

const CommandRegistration kSelftest{"selftest", setup_selftest};

}  // namespace
}  // namespace metrale::cli
