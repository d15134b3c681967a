// cmd_tune.cpp: `metrale-jit tune [--target T] [--op OP ...] [--m LIST] [--n LIST] [--k LIST]
// [--repeats R] [--out FILE] [--ops FILE]`: times each guarded role of each op against its parent
// over a ladder of M on the device (the host backend without one: for tests, its numbers say
// nothing about a GPU), and writes the tuning table (README "Tuning tables") to FILE, or to stdout.
// One progress line per row goes to stderr, each with the measured and the predicted threshold.
// Invariant: the file is written whole or not at all (save_tuning_table), so a rank reading it
// while a tune runs sees the old table or the new one.
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli_support.hpp"
#include "metrale/error.hpp"
#include "metrale/ops/tuning_table.hpp"
#include "op_plugins.hpp"
#include "op_runtime.hpp"

namespace metrale::cli {
namespace {

struct TuneOptions {
  std::string target;
  std::vector<std::string> ops;
  TuneRequest request;
  std::string out;
};

int tune(TuneOptions& options) {
  auto runtime = open_device_or_host(options.target);
  for (const std::string& name : options.ops) {
    options.request.ops.push_back(require_op(runtime->ops(), name).name);
  }
  options.request.progress = [](std::string_view line) { std::fputs(fmt::format("tune: {}\n", line).c_str(), stderr); };
  std::fputs(
      fmt::format(
          "tune: on {} (target {}){}\n", runtime->backend()->describe(), runtime->target().name,
          runtime->backend()->needs_compiled_image() ? "" : "; the host backend: thresholds for tests, not for a GPU")
          .c_str(),
      stderr);
  const ops::TuningTable table = runtime->tune(options.request);
  if (options.out.empty()) {
    std::fputs(ops::write_tuning_table(table).c_str(), stdout);
  } else {
    save_tuning_table(table, options.out);
    std::fputs(
        fmt::format("tune: wrote {} ({} row{})\n", options.out, table.rows.size(), table.rows.size() == 1 ? "" : "s")
            .c_str(),
        stderr);
  }
  return table.rows.empty() ? kFailed : kDone;
}

void setup_tune(CLI::App& app, CommandContext& context) {
  auto* command =
      app.add_subcommand("tune", "Measure where each guarded role starts beating its parent and write a tuning table");
  auto options = std::make_shared<TuneOptions>();
  command->add_option("--target", options->target, "Target (default: the device's, else hopper)");
  command->add_option("--op", options->ops, op_names_help() + " (repeatable; default: every op with a tunable guard)");
  command->add_option("--m", options->request.m, "The ladder of M (comma-separated; default 1 to 4096)")
      ->delimiter(',');
  command->add_option("--n", options->request.n, "N values (comma-separated; default 96)")->delimiter(',');
  command->add_option("--k", options->request.k, "K values (comma-separated; default 5120)")->delimiter(',');
  command->add_option("--repeats", options->request.repeats, "Timed calls per point (the median is kept)")
      ->check(CLI::Range(1, 1000));
  command->add_option("--out", options->out, "Write the table here (default: stdout)");
  add_ops_option(command);
  command->callback([options, &context] { run_command(context, [&] { return tune(*options); }); });
}

const CommandRegistration kTune{"tune", setup_tune};

}  // namespace
}  // namespace metrale::cli
