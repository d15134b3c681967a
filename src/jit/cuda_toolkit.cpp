// cuda_toolkit.cpp: where the toolkit's headers are and what names the toolkit in a cache key.
// Why not a digest of the headers: a CUDA 13 toolkit holds thousands of them (CCCL alone), and
// hashing them on every process start would cost more than many compiles; the versions the
// headers declare, the canonical folders and the version files' sizes and times change whenever
// another toolkit, or an update of this one in place, would be compiled against.
#include "jit/cuda_toolkit.hpp"

#define XXH_INLINE_ALL
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>
#include <xxhash.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "ground/log.hpp"
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

CudaHeaderChoice choose_cuda_headers(std::span<const CudaPlace> places, std::string_view nvrtc_origin,
                                     std::span<const std::string> nvrtc_dirs,
                                     const std::function<bool(const std::string&)>& has_headers) {
  CudaHeaderChoice out;
  const auto overridden = std::find_if(
      places.begin(), places.end(), [](const CudaPlace& place) { return place.origin == "METRALE_CUDA_INCLUDE_DIR"; });
  if (overridden != places.end()) {
    if (overridden->include_dirs.empty() || !has_headers(overridden->include_dirs.front())) {
      out.problem =
          fmt::format("METRALE_CUDA_INCLUDE_DIR names {}, which holds no cuda_bf16.h",
                      overridden->include_dirs.empty() ? std::string("no folder") : overridden->include_dirs.front());
      return out;
    }
    out.dirs = overridden->include_dirs;
    out.origin = overridden->origin;
    return out;
  }
  // The loaded NVRTC's own headers first: compiler and headers of one release. A set derived from
  // the loaded file (headers_beside_nvrtc) is pairs, <include> and its cccl folder, for the path as
  // loaded and as resolved: the first pair whose include folder has the headers is the set.
  if (!nvrtc_origin.empty() && !nvrtc_dirs.empty()) {
    const bool pairs = nvrtc_dirs.size() % 2 == 0 && nvrtc_dirs[1] == nvrtc_dirs[0] + "/cccl";
    const std::size_t step = pairs ? 2 : nvrtc_dirs.size();
    for (std::size_t i = 0; i < nvrtc_dirs.size(); i += step) {
      if (has_headers(nvrtc_dirs[i])) {
        out.dirs = std::vector<std::string>(nvrtc_dirs.begin() + static_cast<std::ptrdiff_t>(i),
                                            nvrtc_dirs.begin() + static_cast<std::ptrdiff_t>(i + step));
        out.origin = std::string(nvrtc_origin);
        return out;
      }
    }
  }
  std::vector<std::string> looked;
  const auto note = [&looked](const std::string& dir) {
    if (std::find(looked.begin(), looked.end(), dir) == looked.end()) {
      looked.push_back(dir);
    }
  };
  if (!nvrtc_origin.empty() && !nvrtc_dirs.empty()) {
    note(nvrtc_dirs.front());
  }
  for (const CudaPlace& place : places) {
    if (place.include_dirs.empty()) {
      continue;
    }
    note(place.include_dirs.front());
    if (has_headers(place.include_dirs.front())) {
      out.dirs = place.include_dirs;
      out.origin = place.origin;
      return out;
    }
  }
  out.problem = fmt::format("no CUDA headers (cuda_bf16.h) were found: looked in {}", fmt::join(looked, ", "));
  return out;
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
  std::vector<std::string> dirs = toolkit_include_dirs(include_dir, [](const std::string& cccl) {
    std::error_code error;
    return std::filesystem::is_directory(std::filesystem::path(cccl) / "cuda" / "std", error);
  });
  return read_cuda_header_set(dirs);
}

CudaToolkit read_cuda_header_set(const std::vector<std::string>& dirs) {
  CudaToolkit toolkit;
  if (dirs.empty()) {
    return toolkit;
  }
  toolkit.include_dirs.push_back(dirs.front());
  for (std::size_t i = 1; i < dirs.size(); ++i) {
    std::error_code error;
    // A CCCL folder counts only when it holds libcu++ (an empty include/cccl is not CUDA 13's).
    if (std::filesystem::is_directory(std::filesystem::path(dirs[i]) / "cuda" / "std", error)) {
      toolkit.include_dirs.push_back(dirs[i]);
    }
  }
  std::vector<std::string> canonical;
  for (const std::string& dir : toolkit.include_dirs) {
    std::error_code error;
    const std::filesystem::path resolved = std::filesystem::weakly_canonical(dir, error);
    canonical.push_back(error ? dir : resolved.string());
  }
  const std::filesystem::path cuda_h = std::filesystem::path(dirs.front()) / "cuda.h";
  std::string cccl_version;
  std::string fingerprint = file_stamp(cuda_h);
  for (std::size_t i = 1; i < toolkit.include_dirs.size() && cccl_version.empty(); ++i) {
    const std::filesystem::path version_h = std::filesystem::path(toolkit.include_dirs[i]) / kCcclVersionHeader;
    cccl_version = defined_number(version_h, "CCCL_VERSION");
    fingerprint += "|" + file_stamp(version_h);
  }
  toolkit.identity = toolkit_identity(defined_number(cuda_h, "CUDA_VERSION"), cccl_version, canonical, fingerprint);
  return toolkit;
}

const CudaHeaderChoice& cuda_header_choice() {
  static const CudaHeaderChoice choice = [] {
    const NvrtcLibrary& nvrtc = nvrtc_library();
    const std::vector<CudaPlace> places = cuda_search_places(process_cuda_search_inputs());
    CudaHeaderChoice chosen = choose_cuda_headers(
        places, nvrtc.available() ? nvrtc.origin : std::string(), nvrtc.include_dirs, [](const std::string& dir) {
          std::error_code missing;
          return std::filesystem::exists(std::filesystem::path(dir) / "cuda_bf16.h", missing);
        });
    if (chosen.dirs) {
      logger().info("CUDA headers from {} ({})", fmt::join(*chosen.dirs, ", "), chosen.origin);
      if (nvrtc.available() && chosen.origin != nvrtc.origin) {
        logger().warn("the CUDA headers ({}) are not NVRTC's own ({}): a kernel that includes them may not compile",
                      chosen.origin, nvrtc.origin);
      }
    } else {
      logger().info("{}; only sources that include no CUDA header compile", chosen.problem);
    }
    return chosen;
  }();
  return choice;
}

const std::optional<CudaToolkit>& cuda_toolkit() {
  static const std::optional<CudaToolkit> toolkit = []() -> std::optional<CudaToolkit> {
    const CudaHeaderChoice& choice = cuda_header_choice();
    if (!choice.dirs) {
      return std::nullopt;
    }
    return read_cuda_header_set(*choice.dirs);
  }();
  return toolkit;
}

std::optional<std::string> cuda_include_dir() {
  const std::optional<CudaToolkit>& toolkit = cuda_toolkit();
  return toolkit ? std::optional<std::string>(toolkit->include_dirs.front()) : std::nullopt;
}

}  // namespace metrale
