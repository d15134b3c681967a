// jit/compile_target.hpp: which architecture NVRTC compiles for on a given device,
// and which sources are compiled against the CUDA toolkit's headers (jit/cuda_toolkit.hpp).
// Invariant: a CUBIN is only ever built for an SM the NVRTC in use lists; otherwise PTX for
// the newest compute_XY at or below the device, which the driver JIT-finishes at load.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "jit/cuda_toolkit.hpp"
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

// The toolkit NVRTC compiles `source` against: none (null) when its includes stay inside the set
// (the library's templates: metrale_types.cuh stands in for the toolkit's headers, so neither the
// toolkit's presence nor its path enters their compile or their key; `toolkit` is then not even
// asked, so no NVRTC is loaded for them), else `toolkit()`'s (an engine's source that asks for
// <cuda_bf16.h> or <cooperative_groups.h>), null when there is none. Pure given `toolkit`.
const CudaToolkit* toolkit_for(const SourceSet& sources, std::string_view source,
                               const std::function<const std::optional<CudaToolkit>&()>& toolkit);
// The same with cuda_toolkit().
const CudaToolkit* toolkit_for(const SourceSet& sources, std::string_view source);
// toolkit_for's include folders (none without a toolkit).
std::vector<std::string> include_dirs_for(const SourceSet& sources, std::string_view source);

}  // namespace metrale
