// host/cuda_source_rewrite.hpp: what the host JIT does to an engine's CUDA source between the
// system compiler's preprocessing (-E) and its compile, so that kernels written for nvcc run on
// the host prelude unchanged, and those the host cannot run are refused by name.
// In the lines of the engine's own files (line markers naming a member of its source set; the
// prelude, the library's headers and the system's are left alone):
// - `extern __shared__ T name[]...;` (the prelude spells __shared__ `thread_local`, so the
//   preprocessed text says `extern thread_local`) becomes, on the same line,
//     using metrale_extern_shared_type_N = T (*)...;
//     static thread_local metrale_extern_shared_type_N name = extern_shared<...>();
//     static const ExternSharedHook metrale_extern_shared_hook_N{+[]() { name = extern_shared<...>(); }};
//   a thread-local pointer to the launch's dynamic shared memory (T* for `T name[]`, T (*)[N]
//   for `T name[][N]`), valid at block and namespace scope alike, set on its first use on each OS
//   thread and refreshed by the hook before each GPU thread runs (the prelude's
//   refresh_extern_shared), so several such declarations alias one buffer as on a GPU;
// - a call of printf (also ::printf, std::printf) becomes kernel_printf, one line of the launch's log;
// - glibc's __assert_fail (what assert expands to) becomes kernel_assert_fail, a failed launch;
// - `template inline` (an explicit instantiation of a __global__ or __forceinline__ template,
//   which the prelude spells `inline`) loses its `inline`, as C++ requires;
// - inline PTX (asm), textures, surfaces, warp matrix functions (nvcuda::wmma) and kernel launches
//   from a kernel, inside a function's body, stub that body (below); anywhere else (a parameter
//   list, namespace scope) they are the unit's refusal naming each construct with its file and line.
// Stubs (so a file's kernels load independently): the body of a function (function_bodies.hpp)
// that holds such a construct, or a line the compiler failed on (`failed`, from the log of an
// earlier try: compile_log_locations.hpp), becomes a call of an undefined function,
// metrale_host_unavailable_<N>, N its index in `stubbed`. A kernel that never reaches the function
// links (the host JIT links with --gc-sections, so an unused non-inline one is dropped too); one
// that reaches it fails to link naming that symbol, which the host JIT turns into a refusal naming
// the function and why: never a kernel that runs without it.
// Invariants: pure; a rewrite keeps every newline where it was, so line markers, the compiler's
// messages and the prelude's call sites (__builtin_LINE) still name the engine's lines; nothing
// outside the engine's lines changes, so the library's own device-only branches (already removed
// by the preprocessor) and the standard library's `asm` never count.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "host/cuda_token_scanner.hpp"

namespace metrale::host {

// Bumped whenever what rewrite_cuda_source() writes changes: part of every host JIT key.
inline constexpr std::string_view kCudaSourceRewriteVersion = "cuda-source-rewrite-4";

// The name of a stub's undefined function, before its index.
inline constexpr std::string_view kUnavailableStubPrefix = "metrale_host_unavailable_";

// A line of an engine's file the compiler failed on, and its message.
struct SourceLine {
  std::string file;  // the engine's name of the file
  std::uint32_t line = 0;
};

struct FailedLine {
  std::string file;  // the engine's name of the file
  std::uint32_t line = 0;
  std::string reason;
  // The instantiation chain's other engine lines, outermost first, tried in turn when `line` is in
  // no function's body (an explicit instantiation at namespace scope: the template's body is stubbed).
  std::vector<SourceLine> inner;
};

// A function whose body the rewrite replaced by a stub.
struct StubbedFunction {
  std::string name;            // "lane_id", "Tile::sum"
  std::string where;           // "k.cu:12", where its name stands
  std::string reason;          // what the host cannot build in it: "inline PTX (asm) at k.cu:14", a compiler's message
  bool from_compiler = false;  // a reason came from a failed line (the compiler's log says more)
};

struct CudaSourceRewrite {
  std::string text;     // the preprocessed unit, rewritten (meaningful when refusal is empty)
  std::string refusal;  // "" or why the host backend cannot run it, naming constructs and lines
  std::vector<StubbedFunction> stubbed;
  std::vector<FailedLine> unplaced;  // failed lines in no function's body (no stub can take them)
};

CudaSourceRewrite rewrite_cuda_source(std::string_view preprocessed, const SourceNameFn& source_name,
                                      std::span<const FailedLine> failed = {});

}  // namespace metrale::host
