// cuda_search.cpp: the ordered places where NVRTC and the CUDA headers are looked for
// (jit/cuda_search.hpp). Nothing here opens a library or reads a header: nvrtc_library.cpp and
// cuda_toolkit.cpp walk the list.
#include "jit/cuda_search.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

namespace metrale {
namespace {

#ifdef METRALE_NVRTC_BUILD_PATH
constexpr const char* kBuildNvrtc = METRALE_NVRTC_BUILD_PATH;
#else
constexpr const char* kBuildNvrtc = "";
#endif
#ifdef METRALE_CUDA_INCLUDE_DIR
constexpr const char* kBuildInclude = METRALE_CUDA_INCLUDE_DIR;
#else
constexpr const char* kBuildInclude = "";
#endif
#ifdef METRALE_CUDA_MAJOR
constexpr int kBuildMajor = METRALE_CUDA_MAJOR;
#else
constexpr int kBuildMajor = 13;
#endif

std::string env_value(const CudaSearchInputs& inputs, const char* name) {
  const char* value = inputs.getenv ? inputs.getenv(name) : nullptr;
  return value != nullptr ? std::string(value) : std::string();
}

std::string join(const std::filesystem::path& base, std::string_view tail) {
  return (base / tail).lexically_normal().string();
}

// The two wheel layouts of one site-packages folder, this build's major first.
void add_wheel_places(std::vector<CudaPlace>& out, const std::string& site, int cuda_major) {
  const std::filesystem::path nvidia = std::filesystem::path(site) / "nvidia";
  CudaPlace cu13{fmt::format("python wheel nvidia-cuda-nvrtc (cu13) in {}", site),
                 {join(nvidia, "cu13/lib/libnvrtc.so.13")},
                 toolkit_header_set(join(nvidia, "cu13/include")),
                 false};
  CudaPlace cu12{fmt::format("python wheel nvidia-cuda-nvrtc-cu12 in {}", site),
                 {join(nvidia, "cuda_nvrtc/lib/libnvrtc.so.12")},
                 {join(nvidia, "cuda_runtime/include"), join(nvidia, "cuda_cccl/include")},
                 false};
  if (cuda_major == 12) {
    out.push_back(std::move(cu12));
    out.push_back(std::move(cu13));
  } else {
    out.push_back(std::move(cu13));
    out.push_back(std::move(cu12));
  }
}

// A toolkit root ($CUDA_HOME, /usr/local/cuda): lib64/ (Debian, NVIDIA's installers) and lib/
// (conda), this build's soname first.
CudaPlace toolkit_place(std::string origin, const std::string& root, int cuda_major) {
  const int other = cuda_major == 12 ? 13 : 12;
  CudaPlace place{std::move(origin), {}, toolkit_header_set(join(root, "include")), false};
  for (const char* lib : {"lib64", "lib"}) {
    for (const int major : {cuda_major, other}) {
      place.nvrtc.push_back(join(root, fmt::format("{}/libnvrtc.so.{}", lib, major)));
    }
  }
  return place;
}

}  // namespace

std::vector<std::string> toolkit_header_set(const std::string& include_dir) {
  return {include_dir, join(include_dir, "cccl")};
}

std::vector<std::string> split_path_list(std::string_view list) {
  std::vector<std::string> out;
  while (!list.empty()) {
    const std::size_t colon = list.find(':');
    const std::string_view part = list.substr(0, colon);
    if (!part.empty()) {
      out.emplace_back(part);
    }
    list = colon == std::string_view::npos ? std::string_view() : list.substr(colon + 1);
  }
  return out;
}

std::vector<CudaPlace> cuda_search_places(const CudaSearchInputs& inputs) {
  std::vector<CudaPlace> out;
  const int major = inputs.cuda_major;
  const int other = major == 12 ? 13 : 12;
  if (const std::string nvrtc = env_value(inputs, "METRALE_NVRTC_LIBRARY"); !nvrtc.empty()) {
    out.push_back({"METRALE_NVRTC_LIBRARY", {nvrtc}, {}, true});
  }
  if (const std::string include = env_value(inputs, "METRALE_CUDA_INCLUDE_DIR"); !include.empty()) {
    // One folder is a toolkit's include folder (its cccl folder follows); several are a set as
    // given: the folder with cuda_bf16.h, then CCCL's.
    std::vector<std::string> dirs = split_path_list(include);
    if (dirs.size() == 1) {
      dirs = toolkit_header_set(dirs.front());
    }
    out.push_back({"METRALE_CUDA_INCLUDE_DIR", {}, std::move(dirs), false});
  }
  std::vector<std::string> sites = split_path_list(env_value(inputs, "METRALE_PYTHON_SITE_PACKAGES"));
  sites.insert(sites.end(), inputs.venv_site_dirs.begin(), inputs.venv_site_dirs.end());
  sites.insert(sites.end(), inputs.library_site_dirs.begin(), inputs.library_site_dirs.end());
  std::vector<std::string> seen;
  for (const std::string& site : sites) {
    std::filesystem::path path = std::filesystem::path(site).lexically_normal();
    if (!path.has_filename() && path.has_parent_path()) {
      path = path.parent_path();  // "/x/site-packages/" and "/x/site-packages" are one folder
    }
    const std::string normal = path.string();
    if (std::find(seen.begin(), seen.end(), normal) == seen.end()) {
      seen.push_back(normal);
      add_wheel_places(out, normal, major);
    }
  }
  for (const char* variable : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const std::string root = env_value(inputs, variable); !root.empty()) {
      out.push_back(toolkit_place(fmt::format("{}={}", variable, root), root, major));
    }
  }
  out.push_back({"the loader's search path",
                 {fmt::format("libnvrtc.so.{}", major), fmt::format("libnvrtc.so.{}", other)},
                 {},
                 true});
  out.push_back(toolkit_place("/usr/local/cuda", "/usr/local/cuda", major));
  if (!inputs.build_nvrtc.empty() || !inputs.build_include.empty()) {
    CudaPlace built{"the toolkit this library was built with", {}, {}, false};
    if (!inputs.build_nvrtc.empty()) {
      built.nvrtc.push_back(inputs.build_nvrtc);
    }
    if (!inputs.build_include.empty()) {
      built.include_dirs = toolkit_header_set(inputs.build_include);
    }
    out.push_back(std::move(built));
  }
  // An override is the only place for its part: drop every other place's candidates for it.
  const bool nvrtc_overridden = !out.empty() && out.front().origin == "METRALE_NVRTC_LIBRARY";
  const bool include_overridden = std::any_of(
      out.begin(), out.end(), [](const CudaPlace& place) { return place.origin == "METRALE_CUDA_INCLUDE_DIR"; });
  for (CudaPlace& place : out) {
    if (nvrtc_overridden && place.origin != "METRALE_NVRTC_LIBRARY") {
      place.nvrtc.clear();
    }
    if (include_overridden && place.origin != "METRALE_CUDA_INCLUDE_DIR") {
      place.include_dirs.clear();
      place.derive_includes = false;
    }
  }
  std::erase_if(out, [](const CudaPlace& place) {
    return place.nvrtc.empty() && place.include_dirs.empty() && !place.derive_includes;
  });
  return out;
}

CudaSearchInputs process_cuda_search_inputs() {
  CudaSearchInputs inputs;
  inputs.getenv = [](const char* name) { return std::getenv(name); };
  inputs.cuda_major = kBuildMajor;
  inputs.build_nvrtc = kBuildNvrtc;
  inputs.build_include = std::string(kBuildInclude).substr(0, std::string_view(kBuildInclude).find(';'));
  std::error_code error;
  if (const char* venv = std::getenv("VIRTUAL_ENV"); venv != nullptr && *venv != '\0') {
    const std::filesystem::path lib = std::filesystem::path(venv) / "lib";
    for (const auto& entry : std::filesystem::directory_iterator(lib, error)) {
      const std::string name = entry.path().filename().string();
      if (name.starts_with("python3")) {
        inputs.venv_site_dirs.push_back((entry.path() / "site-packages").string());
      }
    }
    std::sort(inputs.venv_site_dirs.begin(), inputs.venv_site_dirs.end());
  }
  // This library's own file: libmetrale.so in site-packages/metrale/, or the metrale-jit binary
  // (which links the library statically) in site-packages/metrale/bin/.
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&process_cuda_search_inputs), &info) != 0 && info.dli_fname != nullptr) {
    const std::filesystem::path self = std::filesystem::weakly_canonical(info.dli_fname, error);
    if (!error) {
      // Two levels up at most: never some unrelated nvidia/ folder higher in the tree.
      for (const std::filesystem::path& dir :
           {self.parent_path().parent_path(), self.parent_path().parent_path().parent_path()}) {
        if (!dir.empty() && std::filesystem::is_directory(dir / "nvidia", error)) {
          inputs.library_site_dirs.push_back(dir.string());
          break;
        }
      }
    }
  }
  return inputs;
}

}  // namespace metrale
