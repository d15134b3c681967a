// main.cpp: the metrale-jit command line. Each command lives in its own cmd_<name>.cpp and
// registers itself (command.hpp). Exit codes: 0 done, 1 a target, kernel or check failed,
// 2 bad usage.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <exception>

#include "command.hpp"
#include "metrale/error.hpp"

namespace metrale::cli {

std::vector<CommandInfo>& registered_commands() {
  static std::vector<CommandInfo> commands;
  return commands;
}

}  // namespace metrale::cli

int main(int argc, char** argv) {
  using metrale::cli::CommandInfo;
  CLI::App app{"metrale-jit: precompile, dump and explain metrale's run-time GPU kernels"};
  app.require_subcommand(1);
  app.footer(
      "explain, run, selftest, profile and targets serve every declared op by name or alias. An engine's ops:\n"
      "--ops FILE loads a plug-in library exporting extern \"C\" void metrale_declare_ops(metrale::RuntimeOptions&),\n"
      "which adds its sources, kernels and op declarations (see tests/data/engine/engine_ops.cpp).");
  metrale::cli::CommandContext context;
  auto commands = metrale::cli::registered_commands();
  std::sort(commands.begin(), commands.end(),
            [](const CommandInfo& a, const CommandInfo& b) { return a.name < b.name; });
  for (const auto& command : commands) {
    command.setup(app, context);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? metrale::cli::kDone : metrale::cli::kBadUsage;
  } catch (const metrale::Error& e) {
    std::fprintf(stderr, "metrale-jit: %s\n", e.what());
    return metrale::cli::kFailed;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "metrale-jit: unexpected error: %s\n", e.what());
    return metrale::cli::kFailed;
  }
  return context.exit_code;
}
