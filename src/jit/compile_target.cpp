// compile_target.cpp: arch choice, and which sources are compiled against the CUDA toolkit.
#include "jit/compile_target.hpp"

#include <vector>

namespace metrale {

std::optional<CompileTarget> choose_compile_target(ComputeCapability device, std::span<const int> supported) {
  const int device_sm = device.major * 10 + device.minor;
  int best_below = -1;
  for (const int arch : supported) {
    if (arch == device_sm) {
      return CompileTarget{device.sm_arch(), ImageKind::kCubin};
    }
    if (arch < device_sm && arch > best_below) {
      best_below = arch;
    }
  }
  if (best_below < 0) {
    return std::nullopt;
  }
  return CompileTarget{"compute_" + std::to_string(best_below), ImageKind::kPtx};
}

const CudaToolkit* toolkit_for(const SourceSet& sources, std::string_view source,
                               const std::function<const std::optional<CudaToolkit>&()>& toolkit) {
  if (!sources.reaches_outside(source)) {
    return nullptr;
  }
  const std::optional<CudaToolkit>& found = toolkit();
  return found ? &*found : nullptr;
}

const CudaToolkit* toolkit_for(const SourceSet& sources, std::string_view source) {
  return toolkit_for(sources, source, cuda_toolkit);
}

std::vector<std::string> include_dirs_for(const SourceSet& sources, std::string_view source) {
  const CudaToolkit* toolkit = toolkit_for(sources, source);
  return toolkit != nullptr ? toolkit->include_dirs : std::vector<std::string>{};
}

}  // namespace metrale
