// jit/compile_report.hpp: what a compiler log says, as values: the resources ptxas
// reports per entry function, and the errors with the source lines they point at.
// Invariant: parsing never throws; lines it does not recognise are skipped, so a newer
// NVRTC's extra chatter costs at most a missing field, never a failed build.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "metrale/jit/source_set.hpp"

namespace metrale {

// One entry function as ptxas -v describes it (bytes, except registers).
struct KernelResources {
  std::string entry;  // the lowered (mangled) name
  int registers = 0;
  int spill_stores = 0;
  int spill_loads = 0;
  int shared_bytes = 0;
  int stack_bytes = 0;
  friend bool operator==(const KernelResources&, const KernelResources&) = default;
};

// Parses the "ptxas info" lines of an NVRTC log compiled with --ptxas-options=-v. Pure.
std::vector<KernelResources> parse_ptxas_resources(std::string_view log);

// One "file(line): error: message" of a log, with the source line it names quoted.
struct SourceDiagnostic {
  std::string file;
  int line = 0;
  std::string severity;  // "error", "warning"
  std::string message;
  std::string quoted_line;  // empty when the file is not in the set or the line is out of range
};

// Parses every "file(line): error|warning: ..." line and quotes the line from `sources`. Pure.
std::vector<SourceDiagnostic> parse_diagnostics(std::string_view log, const SourceSet& sources);

// The log followed by the quoted source lines of its errors, for humans (CLI, log once).
std::string annotated_log(std::string_view log, const std::vector<SourceDiagnostic>& diagnostics);

// The first line of a compiler log that names an error, else its first non-empty line, else
// "(the compiler left no log)". Pure.
std::string first_error_line(std::string_view log);

// Why a variant whose compile failed is absent: "compile failed: <first error line>", then the
// whole log on the lines after it (as the host backend's "load failed: ..." carries its
// compiler's), so a caller reading only the reason (metrale_registry_handle, Python's
// CompileError) sees every diagnostic. Pure.
std::string compile_failure_reason(std::string_view log);

}  // namespace metrale
