// nvrtc_library.cpp: dlopen of libnvrtc from the first place of jit/cuda_search.hpp that has one,
// and resolution of the entry points the compiler uses.
#include "jit/nvrtc_library.hpp"

#define XXH_INLINE_ALL
#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <link.h>
#include <xxhash.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "ground/log.hpp"

namespace metrale {
namespace {

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

// The header set beside a library the loader found by its soname: <its folder>/../include, for
// the path as loaded and for the file it resolves to (/usr/local/cuda/lib64/libnvrtc.so.13 ->
// targets/x86_64-linux/lib/...), each with its cccl folder.
std::vector<std::string> includes_beside(const std::string& loaded) {
  std::vector<std::string> out;
  std::error_code error;
  const std::filesystem::path resolved = std::filesystem::weakly_canonical(loaded, error);
  for (const std::string& path : {loaded, error ? std::string() : resolved.string()}) {
    if (path.empty()) {
      continue;
    }
    const std::string include =
        (std::filesystem::path(path).parent_path().parent_path() / "include").lexically_normal().string();
    for (std::string& dir : toolkit_header_set(include)) {
      if (std::find(out.begin(), out.end(), dir) == out.end()) {
        out.push_back(std::move(dir));
      }
    }
  }
  return out;
}

}  // namespace

NvrtcLibrary load_nvrtc_library(const std::vector<CudaPlace>& places) {
  NvrtcLibrary out;
  void* library = nullptr;
  for (const CudaPlace& place : places) {
    for (const std::string& candidate : place.nvrtc) {
      const bool is_path = candidate.find('/') != std::string::npos;
      std::error_code error;
      if (is_path && !std::filesystem::exists(candidate, error)) {
        // An override is reported even when absent; other places' absent files are noise.
        if (place.origin == "METRALE_NVRTC_LIBRARY") {
          out.tried.push_back(fmt::format("{} (METRALE_NVRTC_LIBRARY: no such file)", candidate));
        }
        continue;
      }
      library = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (library != nullptr) {
        out.path = loaded_path(library, candidate);
        out.origin = place.origin;
        out.include_dirs = place.derive_includes ? includes_beside(out.path) : place.include_dirs;
        break;
      }
      const char* error_text = dlerror();
      out.tried.push_back(fmt::format("{} ({})", candidate, error_text != nullptr ? error_text : "unknown"));
    }
    if (library != nullptr) {
      break;
    }
  }
  if (library == nullptr) {
    std::vector<std::string> origins;
    for (const CudaPlace& place : places) {
      if (!place.nvrtc.empty()) {
        origins.push_back(place.origin);
      }
    }
    out.reason = fmt::format("no NVRTC was found: looked in {}{}", fmt::join(origins, ", "),
                             out.tried.empty() ? std::string() : fmt::format("; tried {}", fmt::join(out.tried, "; ")));
    return out;
  }
  auto* api_storage = new NvrtcApi();  // never freed: the library is never unloaded either
  NvrtcApi& api = *api_storage;
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
  // The PCH entry points are optional: all four or none (a partial set counts as none).
  std::string pch_missing;
  resolve(library, api.get_pch_heap_size, "nvrtcGetPCHHeapSize", pch_missing);
  resolve(library, api.set_pch_heap_size, "nvrtcSetPCHHeapSize", pch_missing);
  resolve(library, api.get_pch_create_status, "nvrtcGetPCHCreateStatus", pch_missing);
  resolve(library, api.get_pch_heap_size_required, "nvrtcGetPCHHeapSizeRequired", pch_missing);
  if (!pch_missing.empty()) {
    api.get_pch_heap_size = nullptr;
    api.set_pch_heap_size = nullptr;
    api.get_pch_create_status = nullptr;
    api.get_pch_heap_size_required = nullptr;
  }
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

const NvrtcLibrary& nvrtc_library() {
  static const NvrtcLibrary library = [] {
    NvrtcLibrary loaded = load_nvrtc_library(cuda_search_places(process_cuda_search_inputs()));
    if (loaded.available()) {
      logger().info("NVRTC {} loaded from {} ({})", loaded.version, loaded.path, loaded.origin);
    } else {
      logger().info("{}; kernels come only from memory, bundles and the disk cache", loaded.reason);
    }
    return loaded;
  }();
  return library;
}

}  // namespace metrale
