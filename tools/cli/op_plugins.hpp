// op_plugins.hpp: `--ops FILE`, an engine's ops in the CLI. FILE is a shared library (a plug-in)
// exporting `extern "C" void metrale_declare_ops(metrale::RuntimeOptions&)`, which adds the
// engine's template sources, kernel declarations and op declarations to the options every
// command opens its runtime with; from then on the engine's ops are served like the library's
// (explain, run, selftest, targets, build). `--op-file FILE` does the same for a TOML op file
// (src/ops/op_spec_toml.hpp): an op declared as data, no C++; a malformed one is a ConfigError
// naming the file, the line and the key.
// Invariants: a plug-in is loaded once per process and never unloaded (its declarations' code
// lives in it); one that cannot be opened or lacks the function is a UsageError (exit 2) naming
// the file; the plug-in must be built against the same metrale headers as this binary (the
// function takes a C++ type).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "metrale/runtime.hpp"

namespace metrale::cli {

// The name of the function a plug-in exports.
inline constexpr const char* kDeclareOpsSymbol = "metrale_declare_ops";

// Adds `--ops FILE` and `--op-file FILE` (both repeatable) to `command`; the files land in one process-wide list.
void add_ops_option(CLI::App* command);

// Loads every --ops file (once) and lets each add its declarations to `options`, then adds each
// --op-file's op, kernels and sources.
void apply_op_plugins(RuntimeOptions& options);

}  // namespace metrale::cli
