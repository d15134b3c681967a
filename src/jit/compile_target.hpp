// jit/compile_target.hpp: which architecture NVRTC compiles for on a given device,
// and where the CUDA headers that templates #include live. Both are pure decisions.
// Invariant: a CUBIN is only ever built for an SM the NVRTC in use lists; otherwise PTX for
// the newest compute_XY at or below the device, which the driver JIT-finishes at load.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>

#include "metrale/gpu/compute_capability.hpp"
#include "metrale/gpu/gpu_backend.hpp"
#include "metrale/jit/source_set.hpp"

namespace metrale {

struct CompileTarget {
  std::string arch;  // "sm_90" (CUBIN) or "compute_89" (PTX)
  ImageKind image_kind = ImageKind::kCubin;
  friend bool operator==(const CompileTarget&, const CompileTarget&) = default;
};

// `supported` is nvrtcGetSupportedArchs' list (e.g. {75, 80, ..., 121}). nullopt when every
// listed arch is newer than the device (the NVRTC in use cannot target it at all).
std::optional<CompileTarget> choose_compile_target(ComputeCapability device, std::span<const int> supported);

// The first candidate directory that holds cuda_bf16.h, in this order: METRALE_CUDA_INCLUDE_DIR,
// $CUDA_HOME/include, $CUDA_PATH/include, the build-time toolkit include dir,
// /usr/local/cuda/include. `getenv` and `has_headers` are parameters so the choice is testable.
std::optional<std::string> choose_cuda_include_dir(const std::function<const char*(const char*)>& getenv,
                                                   std::string_view build_time_dir,
                                                   const std::function<bool(const std::string&)>& has_headers);
// The same with the process environment and the file system; cached after the first call.
const std::optional<std::string>& cuda_include_dir();

// The include directory NVRTC gets for `source`: none when its includes stay inside the set (the
// library's templates: metrale_types.cuh stands in for the toolkit's headers, so neither the
// toolkit's presence nor its path enters their compile or their key), else `toolkit_dir` (an
// engine's source that asks for <cuda_bf16.h>). Pure.
std::string include_dir_for(const SourceSet& sources, std::string_view source, std::string_view toolkit_dir);
// The same with cuda_include_dir().
std::string include_dir_for(const SourceSet& sources, std::string_view source);

}  // namespace metrale
