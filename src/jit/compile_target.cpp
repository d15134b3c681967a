// compile_target.cpp: arch choice, CUDA include directory resolution and which sources get it.
#include "jit/compile_target.hpp"

#include <cstdlib>
#include <filesystem>
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

std::optional<std::string> choose_cuda_include_dir(const std::function<const char*(const char*)>& getenv,
                                                   std::string_view build_time_dir,
                                                   const std::function<bool(const std::string&)>& has_headers) {
  std::vector<std::string> candidates;
  auto from_env = [&](const char* name, const char* suffix) {
    if (const char* value = getenv(name); value != nullptr && *value != '\0') {
      candidates.push_back(std::string(value) + suffix);
    }
  };
  from_env("METRALE_CUDA_INCLUDE_DIR", "");
  from_env("CUDA_HOME", "/include");
  from_env("CUDA_PATH", "/include");
  // CMake's CUDAToolkit_INCLUDE_DIRS may be a list; its first entry holds cuda_bf16.h.
  if (const std::string_view first = build_time_dir.substr(0, build_time_dir.find(';')); !first.empty()) {
    candidates.emplace_back(first);
  }
  candidates.emplace_back("/usr/local/cuda/include");
  for (const std::string& candidate : candidates) {
    if (has_headers(candidate)) {
      return candidate;
    }
  }
  return std::nullopt;
}

const std::optional<std::string>& cuda_include_dir() {
#ifdef METRALE_CUDA_INCLUDE_DIR
  static constexpr std::string_view kBuildTimeDir = METRALE_CUDA_INCLUDE_DIR;
#else
  static constexpr std::string_view kBuildTimeDir;
#endif
  static const std::optional<std::string> dir =
      choose_cuda_include_dir([](const char* name) { return std::getenv(name); }, kBuildTimeDir,
                              [](const std::string& candidate) {
                                std::error_code error;
                                return std::filesystem::exists(std::filesystem::path(candidate) / "cuda_bf16.h", error);
                              });
  return dir;
}

std::string include_dir_for(const SourceSet& sources, std::string_view source, std::string_view toolkit_dir) {
  return sources.reaches_outside(source) ? std::string(toolkit_dir) : std::string();
}

std::string include_dir_for(const SourceSet& sources, std::string_view source) {
  return include_dir_for(sources, source, cuda_include_dir().value_or(""));
}

}  // namespace metrale
