// cmd_verify.cpp: `metrale-jit verify [--target NAME] [--json] [--ops FILE]`: opens a runtime on
// the CUDA device (else the host backend) with verification on, waits for every kernel's verdict
// and prints one row per kernel: kernel, params, check, verdict (passed, failed, skipped), worst
// error, ms, and whether the verdict came from the verdict cache. `--json`: a list of objects
// with exactly the keys kernel, params, check, verdict, worst, ms, cached. Exit 1 when a kernel
// failed (it is refused: the ops use the next kernel), 0 otherwise.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "cli_support.hpp"
#include "op_plugins.hpp"
#include "op_runtime.hpp"

namespace metrale::cli {
namespace {

// The table's check column: each distinct check once with its shape count ("bytes == parent x3"),
// the shapes themselves are in --json.
std::string check_summary(const std::string& check) {
  std::vector<std::pair<std::string, int>> kinds;
  std::size_t start = 0;
  while (start < check.size()) {
    std::size_t end = check.find("; ", start);
    end = end == std::string::npos ? check.size() : end;
    std::string kind = check.substr(start, end - start);
    kind = kind.substr(0, kind.find(" ("));
    auto found = std::find_if(kinds.begin(), kinds.end(), [&](const auto& known) { return known.first == kind; });
    if (found == kinds.end()) {
      kinds.emplace_back(kind, 1);
    } else {
      ++found->second;
    }
    start = end + 2;
  }
  std::string out;
  for (const auto& [kind, count] : kinds) {
    out += fmt::format("{}{} x{}", out.empty() ? "" : "; ", kind, count);
  }
  return out.empty() ? "-" : out;
}

struct VerifyOptions {
  std::string target;
  bool json = false;
};

int verify(const VerifyOptions& options) {
  RuntimeOptions opened_with = runtime_options(options.target);
  opened_with.verify = true;
  auto runtime = open_device_or_host(std::move(opened_with));
  runtime->registry().wait_background();
  const std::vector<KernelVerdict> verdicts = runtime->verdicts();
  std::size_t failed = 0;
  for (const KernelVerdict& verdict : verdicts) {
    failed += verdict.verdict == ops::CheckVerdict::kFailed ? 1 : 0;
  }
  if (options.json) {
    nlohmann::json rows = nlohmann::json::array();
    for (const KernelVerdict& v : verdicts) {
      rows.push_back({{"kernel", v.kernel},
                      {"params", v.params},
                      {"check", v.check},
                      {"verdict", std::string(ops::to_string(v.verdict))},
                      {"worst", v.worst},
                      {"ms", v.ms},
                      {"cached", v.cached}});
    }
    std::fputs((rows.dump(2) + "\n").c_str(), stdout);
  } else {
    TextTable table({{"kernel"}, {"params"}, {"check"}, {"verdict"}, {"worst"}, {"ms", true}, {"cached"}});
    for (const KernelVerdict& v : verdicts) {
      table.add_row({v.kernel, v.params, check_summary(v.check), std::string(ops::to_string(v.verdict)), v.worst,
                     fmt::format("{:.1f}", v.ms), v.cached ? "yes" : "no"});
    }
    std::fputs(fmt::format("verify on {} (target {})\n{}{} kernels, {} failed\n", runtime->backend()->describe(),
                           runtime->target().name, table.render(), verdicts.size(), failed)
                   .c_str(),
               stdout);
  }
  return failed == 0 ? kDone : kFailed;
}

void setup_verify(CLI::App& app, CommandContext& context) {
  auto* command = app.add_subcommand(
      "verify", "Verify every kernel on this device (else the host backend) as a runtime does before using it");
  auto options = std::make_shared<VerifyOptions>();
  command->add_option("--target", options->target, "Target (default: the device's, else hopper)");
  command->add_flag("--json", options->json, "Print JSON (a list of objects) instead of a table");
  add_ops_option(command);
  command->callback([options, &context] { run_command(context, [&] { return verify(*options); }); });
}

const CommandRegistration kVerify{"verify", setup_verify};

}  // namespace
}  // namespace metrale::cli
