// jit/nvrtc_pch.hpp (private): NVRTC's automatic precompiled headers (CUDA 12.8+) around one
// compile_with_nvrtc call: whether a compile asks for them, the options it then adds, and what
// NVRTC did (created a PCH, used one, neither), read back from the program and its log.
// Scope, from experiment with NVRTC 13.0 (BENCHMARKS.md, "Precompiled headers"):
// - Within a process only. NVRTC's PCH file is an image of its PCH heap at that heap's address,
//   so another process (another address under ASLR) refuses it ("incompatible precompiled header
//   (PCH) heap allocation address", warning 20282) and compiles without it; PCH files (about
//   210 MB for CUB + cooperative groups) are therefore not kept for other processes: they go to
//   this process's private folder (jit/nvrtc_pch_folder.hpp), removed when the process ends.
// - NVRTC decides per compile whether a PCH fits (same leading #include sequence, macros and
//   options); a PCH that does not fit is refused by NVRTC itself, never used.
// Invariants: PCH never fails a compile (a missing entry point, a bad METRALE_PCH value, a failed
// resize: the compile runs as without it, said once in the log); the PCH heap is resized only
// while no compile that uses PCH is running (a shared/exclusive lock: resizing frees the heap
// under any compile reading it), and only ever grown; the log a caller sees carries no PCH chatter.
#pragma once

#include <cstddef>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "jit/nvrtc_library.hpp"
#include "metrale/environment.hpp"

namespace metrale {

// What NVRTC did with precompiled headers in one compile.
enum class PchUse {
  kNone,     // not asked, not available, or NVRTC chose neither
  kCreated,  // this compile created a PCH (later compiles of the same prefix can use it)
  kUsed,     // this compile read a PCH an earlier compile of this process created
};
std::string_view pch_use_name(PchUse use);  // "none", "created", "used"

// Which compiles ask for PCH.
enum class PchChoice {
  kAuto,  // METRALE_PCH (on by default), for sources compiled against the toolkit's headers only
  kOff,   // never
  kAll,   // METRALE_PCH, for every source (the library's own templates too; for measurements)
};

// The variable pch_enabled reads.
inline constexpr const char* kPchVariable = "METRALE_PCH";

// METRALE_PCH: unset, empty, on, 1, true, yes -> true; off, 0, false, no -> false (any case).
// Another value is logged once at warn and counts as on (PCH never changes a result). Pure but
// for that log line.
bool pch_enabled(const EnvLookup& env);

// One compile's PCH plan: the options to add (empty when PCH is not asked or not available).
struct PchPlan {
  std::vector<std::string> options;  // "-pch", "--pch-dir=<the process's folder>", "--pch-verbose=false"
  [[nodiscard]] bool active() const { return !options.empty(); }
};

// The plan for a compile whose source does (`uses_toolkit`) or does not reach the toolkit's
// headers. Without the PCH entry points (NVRTC before 12.8) says once, at info, that PCH is
// unavailable with that NVRTC's version, and plans nothing; so without a private folder.
PchPlan plan_pch(const NvrtcLibrary& library, PchChoice choice, bool uses_toolkit, const EnvLookup& env);

// Held (shared) by every compile that uses PCH, for the whole nvrtcCompileProgram call.
std::shared_lock<std::shared_mutex> pch_compile_lock();

struct PchOutcome {
  PchUse use = PchUse::kNone;
  std::string log;  // the program's log without NVRTC's "creating/using precompiled header" lines
};

// After an active plan's compile (the compile lock released): reads the creation status, grows
// the heap when NVRTC ran out of it (the next compile of that prefix then creates its PCH), and
// takes NVRTC's PCH messages out of `log`.
PchOutcome finish_pch(const NvrtcLibrary& library, nvrtcProgram program, std::string_view log);

// NVRTC's PCH messages taken out of a log, and which of them it held. Pure.
PchOutcome strip_pch_messages(std::string_view log);

}  // namespace metrale
