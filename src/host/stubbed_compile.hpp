// host/stubbed_compile.hpp: the host JIT's compile of a preprocessed unit, in rounds, so that a
// file's kernels load independently: each round rewrites the unit (cuda_source_rewrite.hpp) with
// the functions the compiler failed on so far stubbed, and compiles it; a failed compile's engine
// lines (compile_log_locations.hpp) are the next round's. It ends built (the functions left out
// named), refused (the rewrite's refusal, or the stubs the kernel reaches: "it needs lane_id_ptx at
// k.cu:9 (inline PTX (asm) at k.cu:11)"), or failed with the compiler's log (a round that stubs
// nothing more, past kStubRounds, a deadline, or the requested kernel's own body: the compiler's
// whole log says that best).
// Invariants: at most 1 + kStubRounds compiles; never a kernel that runs without a function it
// calls (a reached stub is an undefined symbol, so the link fails). Pure but for `compile`.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/cuda_source_rewrite.hpp"
#include "host/host_compiler.hpp"

namespace metrale::host {

// How many times a unit is compiled again with more functions stubbed, at most.
inline constexpr int kStubRounds = 4;

struct StubbedCompile {
  enum class Outcome : std::uint8_t { kBuilt, kRefused, kCompilerFailed, kNotCompiled };
  Outcome outcome = Outcome::kNotCompiled;
  std::string refusal;                   // kRefused: why, naming constructs or functions
  std::optional<CompilerRun> failure;    // kCompilerFailed: the run whose log to report
  std::vector<StubbedFunction> stubbed;  // kBuilt: the functions the object was built without
};

// Compiles `text` (the rewritten unit) and returns its run; nullopt when it could not even be
// handed to the compiler (the caller keeps why: kNotCompiled).
using CompileUnitFn = std::function<std::optional<CompilerRun>(const std::string& text)>;

// `kernel_expression`: the requested kernel's name expression ("ns::k<3>"); `path_prefix`: the
// folder the engine's sources were written to, taken out of messages.
StubbedCompile compile_with_stubs(std::string_view preprocessed, const SourceNameFn& source_name,
                                  std::string_view path_prefix, std::string_view kernel_expression,
                                  const CompileUnitFn& compile);

// "lane_id_ptx at k.cu:9 (inline PTX (asm) at k.cu:11), ..." for messages and the log.
std::string stubbed_list(const std::vector<StubbedFunction>& stubbed);

}  // namespace metrale::host
