// jit/cuda_toolkit.hpp: the CUDA toolkit whose headers NVRTC compiles an engine's source against
// (<cuda_bf16.h>, <cooperative_groups.h>, <cuda/std/...>, <cub/...>), found as nvcc finds them.
// Invariants: the include folders are those nvcc adds by itself, in its order: <toolkit>/include,
// then <toolkit>/include/cccl when the toolkit has one (CUDA 13 keeps libcu++, CUB and Thrust
// there; CUDA 12 has none); they come from METRALE_CUDA_INCLUDE_DIR when set, else from the
// toolkit the loaded NVRTC belongs to, so headers and compiler are of one release; the identity
// names the toolkit (its version and its folders' identity) without hashing its thousands of
// headers, and differs whenever another toolkit (or one patched in place) would be used.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace metrale {

struct CudaToolkit {
  std::vector<std::string> include_dirs;  // the -I folders, in nvcc's order
  std::string identity;                   // "cuda13000-cccl3000001+1a2b3c4d", for cache keys
  friend bool operator==(const CudaToolkit&, const CudaToolkit&) = default;
};

// The include folders beside a loaded libnvrtc: <its folder>/../include, for the path as loaded
// and for the file it resolves to (/usr/local/cuda/lib64/libnvrtc.so.13 ->
// targets/x86_64-linux/lib/...), without duplicates; empty for an empty path. Pure.
std::vector<std::string> nvrtc_include_candidates(std::string_view loaded_path, std::string_view resolved_path);

// The first candidate folder that holds cuda_bf16.h, in this order: METRALE_CUDA_INCLUDE_DIR,
// `nvrtc_dirs` (the loaded NVRTC's toolkit), $CUDA_HOME/include, $CUDA_PATH/include, the
// build-time toolkit include dir (the first of a CMake list), /usr/local/cuda/include.
// `getenv` and `has_headers` are parameters so the choice is testable.
std::optional<std::string> choose_cuda_include_dir(const std::function<const char*(const char*)>& getenv,
                                                   std::span<const std::string> nvrtc_dirs,
                                                   std::string_view build_time_dir,
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

// The toolkit for this process: choose_cuda_include_dir with the environment, the loaded NVRTC
// (loaded on the first call) and the file system, then read_cuda_toolkit; nullopt when no
// folder holds the headers. Cached after the first call.
const std::optional<CudaToolkit>& cuda_toolkit();
// Its first include folder (<toolkit>/include), for the host backend's compiler.
std::optional<std::string> cuda_include_dir();

}  // namespace metrale
