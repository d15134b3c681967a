// jit/nvrtc_compiler.hpp: one NVRTC compilation as a value.
// Input: a source of a SourceSet, the name expressions to instantiate, the arch. Output:
// PTX, CUBIN (real sm_XY only), lowered names, the log with its errors quoted, resources per
// entry function, compile time. Invariants: a compile error is data (ok == false), never an
// exception, and so is a missing NVRTC; the options always carry -std=c++17, --fmad=false (kernels use explicit fma so
// GPU, host and CPU reference agree bit for bit), -default-device, the arch, and the toolkit's
// include folders (-I<cuda>/include, and -I<cuda>/include/cccl on CUDA 13, as nvcc adds them) only
// for a source that includes a file outside its set (compile_target.hpp's toolkit_for).
// Such a source is compiled with NVRTC's automatic precompiled headers (jit/nvrtc_pch.hpp: within
// the process, METRALE_PCH=off turns them off), which never change the code, only the time.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "jit/compile_report.hpp"
#include "jit/nvrtc_pch.hpp"
#include "metrale/jit/source_set.hpp"

namespace metrale {

struct CompileRequest {
  std::string source_name;  // a member of `sources`; compiled as the program's main file
  const SourceSet* sources = nullptr;
  std::vector<std::string> name_expressions;
  std::string arch;  // "sm_90" or "compute_89"
  std::vector<std::string> extra_options;
  PchChoice pch = PchChoice::kAuto;
  EnvLookup env = process_environment();  // METRALE_PCH, and the cache root of the PCH folder
};

struct CompileResult {
  bool ok = false;
  std::string ptx;
  std::string cubin;                       // empty for a compute_XY arch
  std::vector<std::string> lowered_names;  // one per name expression; empty strings when !ok
  std::string log;                         // NVRTC's log, annotated with quoted source lines
  std::vector<SourceDiagnostic> diagnostics;
  std::vector<KernelResources> resources;  // per entry function (CUBIN builds only)
  std::vector<std::string> options;
  // The other sources of the set that the preprocessor opened (include_markers.hpp), sorted;
  // nullopt when the options silence the markers (-w, -Werror, ...).
  std::optional<std::vector<std::string>> included;
  double compile_ms = 0.0;
  PchUse pch = PchUse::kNone;  // what NVRTC did with precompiled headers (its options are not in `options`)
  bool timed_out = false;      // abandoned at its deadline (jit/compile_deadline.hpp); `log` says so

  [[nodiscard]] const KernelResources* resources_for(std::string_view lowered_name) const;
};

// The full option list for one arch, with one -I per include folder, in order. Pure.
std::vector<std::string> nvrtc_options(std::string_view arch, std::span<const std::string> include_dirs,
                                       const std::vector<std::string>& extra_options);

CompileResult compile_with_nvrtc(const CompileRequest& request);

// The environment variables a compile reads through CompileRequest::env: the snapshot a compile
// on a deadline worker owns holds these and no others.
std::span<const char* const> nvrtc_compile_variables();
// The same on a worker thread (jit/compile_deadline.hpp) that owns copies of the request, its source
// set and the environment variables it reads; past `limit_s` the compile is abandoned (its result
// discarded when it ends) and the answer is a failure with timed_out set and the log
// compile_exceeded_reason(limit_s).
CompileResult compile_with_nvrtc(const CompileRequest& request, double limit_s);

// What a key says when no NVRTC was found.
inline constexpr const char* kNoNvrtcVersion = "none";
// "13-0+1a2b3c4d": the NVRTC version and the identity of the libnvrtc file loaded, for cache
// keys and file names; kNoNvrtcVersion without NVRTC. Loads NVRTC (dlopen) on first use.
const std::string& nvrtc_version();
// Whether libnvrtc was found and loaded (loads it on first use), and why not.
bool nvrtc_available();
const std::string& nvrtc_unavailable_reason();
// nvrtcGetSupportedArchs, e.g. {75, 80, 86, ..., 120, 121}; empty without NVRTC.
const std::vector<int>& nvrtc_supported_archs();

}  // namespace metrale
