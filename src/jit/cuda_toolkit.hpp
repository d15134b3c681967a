// jit/cuda_toolkit.hpp: the CUDA toolkit whose headers NVRTC compiles an engine's source against
// (<cuda_bf16.h>, <cooperative_groups.h>, <cuda/std/...>, <cub/...>), found as nvcc finds them.
// Invariants: the include folders are those nvcc adds by itself, in its order: <toolkit>/include,
// then <toolkit>/include/cccl when the toolkit has one (CUDA 13 keeps libcu++, CUB and Thrust
// there; CUDA 12 has none), or a wheel layout's set (jit/cuda_search.hpp); they come from
// METRALE_CUDA_INCLUDE_DIR when set (and only from there: a folder without cuda_bf16.h is a
// problem, not a fall-through), else from the place the loaded NVRTC came from, so headers and
// compiler are of one release, else from the first place of the search order that has them; the
// identity names the header set (its versions and its folders' identity) without hashing its
// thousands of headers, and differs whenever another set (or one patched in place) would be used.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "jit/cuda_search.hpp"

namespace metrale {

struct CudaToolkit {
  std::vector<std::string> include_dirs;  // the -I folders, in nvcc's order
  std::string identity;                   // "cuda13000-cccl3000001+1a2b3c4d", for cache keys
  friend bool operator==(const CudaToolkit&, const CudaToolkit&) = default;
};

// Where the headers come from: the folders, the place (CudaPlace::origin), and, when none was
// found, why (naming METRALE_CUDA_INCLUDE_DIR's value when that was set).
struct CudaHeaderChoice {
  std::optional<std::vector<std::string>> dirs;  // the header set, the folder with cuda_bf16.h first
  std::string origin;
  std::string problem;
};

// The header set, in the order of the invariants above: `places` (cuda_search_places), the
// loaded NVRTC's place (`nvrtc_origin`, "" when none loaded) and its set `nvrtc_dirs`;
// `has_headers` says whether a folder holds cuda_bf16.h. Pure given `has_headers`.
CudaHeaderChoice choose_cuda_headers(std::span<const CudaPlace> places, std::string_view nvrtc_origin,
                                     std::span<const std::string> nvrtc_dirs,
                                     const std::function<bool(const std::string&)>& has_headers);

// nvcc's include folders for a toolkit include folder: `include_dir`, then include_dir/cccl when
// `has_cccl` says it holds cuda/std (CUDA 13's layout). Pure.
std::vector<std::string> toolkit_include_dirs(const std::string& include_dir,
                                              const std::function<bool(const std::string&)>& has_cccl);

// "cuda<CUDA_VERSION>-cccl<CCCL_VERSION>+<8 hex>": the versions the headers declare ("unknown"
// when absent; no cccl part without one) and a hash of the canonical folders and `fingerprint`
// (the version files' sizes and times). Pure.
std::string toolkit_identity(std::string_view cuda_version, std::string_view cccl_version,
                             std::span<const std::string> canonical_dirs, std::string_view fingerprint);

// The toolkit rooted at one include folder, read from the file system: its folders (by
// toolkit_include_dirs) and its identity (cuda.h's CUDA_VERSION, cuda/std/__cccl/version.h's
// CCCL_VERSION, the canonical folders, those two files' sizes and modification times).
CudaToolkit read_cuda_toolkit(const std::string& include_dir);
// The same for a header set (a wheel layout's): the first folder, then those of the others that
// exist; CUDA_VERSION from the first folder's cuda.h, CCCL_VERSION from the first folder of the
// set that has cuda/std/__cccl/version.h.
CudaToolkit read_cuda_header_set(const std::vector<std::string>& dirs);

// The header choice for this process: choose_cuda_headers with the environment's places, the
// loaded NVRTC (loaded on the first call) and the file system; logged once. Cached.
const CudaHeaderChoice& cuda_header_choice();
// Its toolkit (read_cuda_header_set); nullopt when no folder holds the headers. Cached.
const std::optional<CudaToolkit>& cuda_toolkit();
// Its first include folder (<toolkit>/include), for the host backend's compiler.
std::optional<std::string> cuda_include_dir();

}  // namespace metrale
