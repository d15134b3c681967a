// nvrtc_library.cpp: dlopen of libnvrtc and resolution of the entry points the compiler uses.
#include "jit/nvrtc_library.hpp"

#define XXH_INLINE_ALL
#include <cuda.h>  // CUDA_VERSION: the soname this build expects
#include <dlfcn.h>
#include <fmt/format.h>
#include <link.h>
#include <xxhash.h>

#include <cstdlib>
#include <filesystem>

#include "ground/log.hpp"

namespace metrale {
namespace {

#ifdef METRALE_NVRTC_BUILD_PATH
constexpr const char* kBuildPath = METRALE_NVRTC_BUILD_PATH;
#else
constexpr const char* kBuildPath = "";
#endif

template <typename Fn>
bool resolve(void* library, Fn& out, const char* name, std::string& missing) {
  out = reinterpret_cast<Fn>(dlsym(library, name));
  if (out == nullptr && missing.empty()) {
    missing = name;
  }
  return out != nullptr;
}

std::string loaded_path(void* library, const std::string& fallback) {
  link_map* map = nullptr;
  if (dlinfo(library, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr && *map->l_name) {
    return map->l_name;
  }
  return fallback;
}

// The version plus the file's identity, so two builds of one version installed in different
// places (or patched in place to another size) never share cache entries.
std::string identity_of(const std::string& version, const std::string& path) {
  std::error_code error;
  const std::filesystem::path canonical = std::filesystem::weakly_canonical(path, error);
  const std::string name = error ? path : canonical.string();
  const std::uintmax_t size = std::filesystem::file_size(name, error);
  const std::string fingerprint = fmt::format("{}\n{}", name, error ? 0 : size);
  return fmt::format("{}+{:08x}", version,
                     static_cast<std::uint32_t>(XXH3_64bits(fingerprint.data(), fingerprint.size())));
}

NvrtcLibrary load_library() {
  static NvrtcApi api;
  NvrtcLibrary out;
  const std::vector<std::string> candidates =
      nvrtc_candidates(std::getenv("METRALE_NVRTC_LIBRARY"), CUDA_VERSION / 1000, kBuildPath);
  void* library = nullptr;
  std::string tried;
  for (const std::string& candidate : candidates) {
    library = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library != nullptr) {
      out.path = loaded_path(library, candidate);
      break;
    }
    const char* error = dlerror();
    tried += fmt::format("{}{} ({})", tried.empty() ? "" : "; ", candidate, error != nullptr ? error : "unknown");
  }
  if (library == nullptr) {
    out.reason = "no NVRTC was found: tried " + tried;
    return out;
  }
  std::string missing;
  resolve(library, api.version, "nvrtcVersion", missing);
  resolve(library, api.get_num_supported_archs, "nvrtcGetNumSupportedArchs", missing);
  resolve(library, api.get_supported_archs, "nvrtcGetSupportedArchs", missing);
  resolve(library, api.get_error_string, "nvrtcGetErrorString", missing);
  resolve(library, api.create_program, "nvrtcCreateProgram", missing);
  resolve(library, api.destroy_program, "nvrtcDestroyProgram", missing);
  resolve(library, api.add_name_expression, "nvrtcAddNameExpression", missing);
  resolve(library, api.compile_program, "nvrtcCompileProgram", missing);
  resolve(library, api.get_program_log_size, "nvrtcGetProgramLogSize", missing);
  resolve(library, api.get_program_log, "nvrtcGetProgramLog", missing);
  resolve(library, api.get_lowered_name, "nvrtcGetLoweredName", missing);
  resolve(library, api.get_ptx_size, "nvrtcGetPTXSize", missing);
  resolve(library, api.get_ptx, "nvrtcGetPTX", missing);
  resolve(library, api.get_cubin_size, "nvrtcGetCUBINSize", missing);
  resolve(library, api.get_cubin, "nvrtcGetCUBIN", missing);
  if (!missing.empty()) {
    out.reason = fmt::format("no NVRTC was found: {} lacks {}", out.path, missing);
    return out;  // stays loaded: a half-resolved library is simply not used
  }
  int major = 0;
  int minor = 0;
  if (api.version(&major, &minor) != NVRTC_SUCCESS) {
    out.reason = fmt::format("no NVRTC was found: nvrtcVersion failed in {}", out.path);
    return out;
  }
  out.version = fmt::format("{}-{}", major, minor);
  out.identity = identity_of(out.version, out.path);
  out.api = &api;
  return out;
}

}  // namespace

std::vector<std::string> nvrtc_candidates(const char* override_value, int cuda_major, const std::string& build_path) {
  if (override_value != nullptr && *override_value != '\0') {
    return {override_value};
  }
  std::vector<std::string> out{fmt::format("libnvrtc.so.{}", cuda_major)};
  if (!build_path.empty()) {
    out.push_back(build_path);
  }
  return out;
}

const NvrtcLibrary& nvrtc_library() {
  static const NvrtcLibrary library = [] {
    NvrtcLibrary loaded = load_library();
    if (loaded.available()) {
      logger().debug("NVRTC {} loaded from {}", loaded.version, loaded.path);
    } else {
      logger().info("{}; kernels come only from memory, bundles and the disk cache", loaded.reason);
    }
    return loaded;
  }();
  return library;
}

}  // namespace metrale
