// cli_support.hpp: what the build, run and selftest commands share: the usage error that
// exits 2, the wrapper that maps it, and the table and progress printers.
// Invariants: a UsageError is always the caller's mistake (bad flag combination, unknown
// target, a kernel the target does not ship) and exits 2; every other metrale::Error
// reaches main and exits 1; progress goes to stderr only, so stdout stays parseable.
#pragma once

#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "command.hpp"
#include "metrale/target/hardware_target.hpp"

namespace metrale::cli {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A --target no HARDWARE.toml names (a UsageError; explain reports it as exit 1, as it always did).
class UnknownTargetError : public UsageError {
 public:
  using UsageError::UsageError;
};

// Runs a command body returning its exit code; a UsageError is printed and exits 2.
template <typename Body>
void run_command(CommandContext& context, Body&& body) {
  try {
    context.exit_code = body();
  } catch (const UsageError& error) {
    std::fprintf(stderr, "metrale-jit: %s\n", error.what());
    context.exit_code = kBadUsage;
  }
}

// The target called `name`, or an UnknownTargetError listing the known ones.
const HardwareTarget& require_target(const std::vector<HardwareTarget>& targets, std::string_view name);

// A plain-text table: headers, then rows, columns padded to their widest cell.
class TextTable {
 public:
  struct Column {
    std::string header;
    bool right_aligned = false;
  };
  explicit TextTable(std::vector<Column> columns) : columns_(std::move(columns)) {}
  // Throws std::logic_error when the row's width differs from the header's.
  void add_row(std::vector<std::string> cells);
  [[nodiscard]] std::string render() const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// Progress on stderr: on a terminal one line rewritten in place, otherwise one line per step.
class Progress {
 public:
  Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  ~Progress();
  void step(std::string_view line);

 private:
  bool live_ = false;
  std::size_t last_width_ = 0;
};

}  // namespace metrale::cli
