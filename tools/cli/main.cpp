// main.cpp: the metrale-jit command line. Each command lives in its own file and
// registers itself here. Exit codes: 0 done, 1 a kernel or check failed, 2 bad usage.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "metrale/embedded_files.hpp"

int main(int argc, char** argv) {
  CLI::App app{"metrale-jit: precompile, dump and explain metrale's run-time GPU kernels"};
  app.require_subcommand(1);
  auto* targets = app.add_subcommand("targets", "List every target");
  targets->callback([] {
    for (const auto& file : metrale::embedded_hardware()) {
      std::printf("%.*s\n", static_cast<int>(file.name.size()), file.name.data());
    }
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  return 0;
}
