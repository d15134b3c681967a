// command.hpp: how a metrale-jit command plugs into main.cpp without editing it.
// Invariant: each command lives in its own cmd_<name>.cpp and registers one
// CommandRegistration at namespace scope; main adds them in name order.
// Exit codes: 0 done, 1 a target, kernel or check failed, 2 bad usage.
#pragma once

#include <CLI/CLI.hpp>
#include <string_view>
#include <vector>

namespace metrale::cli {

enum ExitCode : int { kDone = 0, kFailed = 1, kBadUsage = 2 };

// What a command's callback reports back to main.
struct CommandContext {
  int exit_code = kDone;
};

// Adds the subcommand to `app`; its callback runs the command and may set context.exit_code.
// A metrale::Error escaping the callback is printed and exits 1.
using CommandSetup = void (*)(CLI::App& app, CommandContext& context);

struct CommandInfo {
  std::string_view name;
  CommandSetup setup;
};

// Every registered command (unordered; main sorts by name).
std::vector<CommandInfo>& registered_commands();

struct CommandRegistration {
  // noexcept: running out of memory before main has nothing better to do than terminate.
  CommandRegistration(std::string_view name, CommandSetup setup) noexcept {
    registered_commands().push_back({name, setup});
  }
};

}  // namespace metrale::cli
