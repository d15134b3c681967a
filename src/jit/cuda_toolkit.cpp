// cuda_toolkit.cpp: where the toolkit's headers are and what names the toolkit in a cache key.
// Why not a digest of the headers: a CUDA 13 toolkit holds thousands of them (CCCL alone), and
// hashing them on every process start would cost more than many compiles; the versions the
// headers declare, the canonical folders and the version files' sizes and times change whenever
// another toolkit, or an update of this one in place, would be compiled against.
#include "jit/cuda_toolkit.hpp"

#define XXH_INLINE_ALL
#include <fmt/format.h>
#include <sys/stat.h>
#include <xxhash.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "jit/nvrtc_library.hpp"

namespace metrale {
namespace {

// The value of `#define NAME <digits>` in a header, "" when it has none. The defines sit in the
// first few hundred lines (cuda.h: line 263), so only the head of a (1 MB) header is read.
std::string defined_number(const std::filesystem::path& header, std::string_view name) {
  std::ifstream in(header, std::ios::binary);
  std::string head(std::size_t{256} * 1024, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  const std::string directive = fmt::format("#define {} ", name);
  const std::size_t at = head.find(directive);
  if (at == std::string::npos) {
    return {};
  }
  std::size_t begin = head.find_first_not_of(' ', at + directive.size());
  std::size_t end = begin;
  while (end < head.size() && head[end] >= '0' && head[end] <= '9') {
    ++end;
  }
  return begin == std::string::npos ? std::string() : head.substr(begin, end - begin);
}

// "<size>:<mtime ns>" of a file, "-" when it cannot be inspected.
std::string file_stamp(const std::filesystem::path& file) {
  struct stat info {};
  if (::stat(file.c_str(), &info) != 0) {
    return "-";
  }
  return fmt::format("{}:{}.{}", info.st_size, info.st_mtim.tv_sec, info.st_mtim.tv_nsec);
}

constexpr std::string_view kCcclVersionHeader = "cuda/std/__cccl/version.h";

}  // namespace

std::vector<std::string> nvrtc_include_candidates(std::string_view loaded_path, std::string_view resolved_path) {
  std::vector<std::string> out;
  for (const std::string_view path : {loaded_path, resolved_path}) {
    if (path.empty()) {
      continue;
    }
    const std::filesystem::path library(path);
    std::string candidate = (library.parent_path().parent_path() / "include").lexically_normal().string();
    if (std::find(out.begin(), out.end(), candidate) == out.end()) {
      out.push_back(std::move(candidate));
    }
  }
  return out;
}

std::optional<std::string> choose_cuda_include_dir(const std::function<const char*(const char*)>& getenv,
                                                   std::span<const std::string> nvrtc_dirs,
                                                   std::string_view build_time_dir,
                                                   const std::function<bool(const std::string&)>& has_headers) {
  std::vector<std::string> candidates;
  auto from_env = [&](const char* name, const char* suffix) {
    if (const char* value = getenv(name); value != nullptr && *value != '\0') {
      candidates.push_back(std::string(value) + suffix);
    }
  };
  from_env("METRALE_CUDA_INCLUDE_DIR", "");
  candidates.insert(candidates.end(), nvrtc_dirs.begin(), nvrtc_dirs.end());
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

std::vector<std::string> toolkit_include_dirs(const std::string& include_dir,
                                              const std::function<bool(const std::string&)>& has_cccl) {
  std::vector<std::string> out{include_dir};
  if (std::string cccl = (std::filesystem::path(include_dir) / "cccl").string(); has_cccl(cccl)) {
    out.push_back(std::move(cccl));
  }
  return out;
}

std::string toolkit_identity(std::string_view cuda_version, std::string_view cccl_version,
                             std::span<const std::string> canonical_dirs, std::string_view fingerprint) {
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  for (const std::string& dir : canonical_dirs) {
    XXH3_64bits_update(state, dir.c_str(), dir.size() + 1);  // the NUL separates the folders
  }
  XXH3_64bits_update(state, fingerprint.data(), fingerprint.size());
  const std::uint64_t hash = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return fmt::format("cuda{}{}+{:08x}", cuda_version.empty() ? "unknown" : cuda_version,
                     cccl_version.empty() ? std::string() : fmt::format("-cccl{}", cccl_version),
                     static_cast<std::uint32_t>(hash ^ (hash >> 32)));
}

CudaToolkit read_cuda_toolkit(const std::string& include_dir) {
  CudaToolkit toolkit;
  toolkit.include_dirs = toolkit_include_dirs(include_dir, [](const std::string& cccl) {
    std::error_code error;
    return std::filesystem::is_directory(std::filesystem::path(cccl) / "cuda" / "std", error);
  });
  std::vector<std::string> canonical;
  for (const std::string& dir : toolkit.include_dirs) {
    std::error_code error;
    const std::filesystem::path resolved = std::filesystem::weakly_canonical(dir, error);
    canonical.push_back(error ? dir : resolved.string());
  }
  const std::filesystem::path cuda_h = std::filesystem::path(include_dir) / "cuda.h";
  std::string cccl_version;
  std::string fingerprint = file_stamp(cuda_h);
  if (toolkit.include_dirs.size() > 1) {
    const std::filesystem::path version_h = std::filesystem::path(toolkit.include_dirs[1]) / kCcclVersionHeader;
    cccl_version = defined_number(version_h, "CCCL_VERSION");
    fingerprint += "|" + file_stamp(version_h);
  }
  toolkit.identity = toolkit_identity(defined_number(cuda_h, "CUDA_VERSION"), cccl_version, canonical, fingerprint);
  return toolkit;
}

const std::optional<CudaToolkit>& cuda_toolkit() {
#ifdef METRALE_CUDA_INCLUDE_DIR
  static constexpr std::string_view kBuildTimeDir = METRALE_CUDA_INCLUDE_DIR;
#else
  static constexpr std::string_view kBuildTimeDir;
#endif
  static const std::optional<CudaToolkit> toolkit = []() -> std::optional<CudaToolkit> {
    const NvrtcLibrary& nvrtc = nvrtc_library();
    std::error_code error;
    const std::filesystem::path resolved =
        nvrtc.path.empty() ? std::filesystem::path() : std::filesystem::weakly_canonical(nvrtc.path, error);
    const std::vector<std::string> nvrtc_dirs =
        nvrtc_include_candidates(nvrtc.path, error ? std::string() : resolved.string());
    const std::optional<std::string> dir = choose_cuda_include_dir(
        [](const char* name) { return std::getenv(name); }, nvrtc_dirs, kBuildTimeDir,
        [](const std::string& candidate) {
          std::error_code missing;
          return std::filesystem::exists(std::filesystem::path(candidate) / "cuda_bf16.h", missing);
        });
    if (!dir) {
      return std::nullopt;
    }
    return read_cuda_toolkit(*dir);
  }();
  return toolkit;
}

std::optional<std::string> cuda_include_dir() {
  const std::optional<CudaToolkit>& toolkit = cuda_toolkit();
  return toolkit ? std::optional<std::string>(toolkit->include_dirs.front()) : std::nullopt;
}

}  // namespace metrale
