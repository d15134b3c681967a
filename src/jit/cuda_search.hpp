// jit/cuda_search.hpp: the places NVRTC and the CUDA headers kernels include are looked for, in
// the one stated order (README "Where CUDA comes from"):
//   1. the explicit overrides: METRALE_NVRTC_LIBRARY (a file or a library name) and
//      METRALE_CUDA_INCLUDE_DIR (folders, ':'-separated); when set, each is the only place for
//      its part, so a wrong setting is reported, never silently replaced by another CUDA;
//   2. the running Python environment's NVIDIA wheels: each site-packages folder named by
//      METRALE_PYTHON_SITE_PACKAGES (':'-separated; the Python package and the metrale-jit console
//      script set it), then those of $VIRTUAL_ENV, then the folders above the loaded library
//      (libmetrale.so in site-packages/metrale/); in each, the CUDA 13 layout
//      (nvidia/cu13/{lib,include,include/cccl}) and the CUDA 12 one (nvidia/cuda_nvrtc/lib,
//      nvidia/cuda_runtime/include, nvidia/cuda_cccl/include), this build's major first;
//   3. $CUDA_HOME, then $CUDA_PATH (lib64/ and include/ of a toolkit);
//   4. the loader's search path (the soname: LD_LIBRARY_PATH, ld.so.cache, or a copy already
//      loaded into the process, e.g. by torch), headers beside the file it resolves to;
//   5. /usr/local/cuda;
//   6. the toolkit this library was built against, when that was a system toolkit.
// Invariants: the list is a pure function of its inputs (testable without touching the file
// system); a place names where it comes from ("python wheel nvidia-cuda-nvrtc (cu13) in <site>")
// so `metrale-jit info` and the log can say which one was chosen; headers come from the same
// place as the NVRTC that was loaded whenever that place has them (one release).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace metrale {

struct CudaPlace {
  std::string origin;                     // "METRALE_NVRTC_LIBRARY", "python wheel ... in /x", "CUDA_HOME=/x", ...
  std::vector<std::string> nvrtc;         // libraries to dlopen, in order (files, or sonames)
  std::vector<std::string> include_dirs;  // the header set: the folder with cuda_bf16.h first, then CCCL's
  bool derive_includes = false;           // headers beside the file the loader resolved (sonames only)
  friend bool operator==(const CudaPlace&, const CudaPlace&) = default;
};

struct CudaSearchInputs {
  std::function<const char*(const char*)> getenv;  // the environment
  std::vector<std::string> library_site_dirs;      // folders above the loaded library (step 2, last)
  std::vector<std::string> venv_site_dirs;         // $VIRTUAL_ENV/lib/python3.*/site-packages, resolved
  int cuda_major = 13;                             // this build's CUDA major: its soname is tried first
  std::string build_nvrtc;                         // the system toolkit's libnvrtc at build time, or ""
  std::string build_include;                       // its include folder, or ""
};

// Every place, in the order above. An override yields one place and ends the list for its part:
// with METRALE_NVRTC_LIBRARY set, no other place has NVRTC candidates (their headers stay); with
// METRALE_CUDA_INCLUDE_DIR set, no other place has headers.
std::vector<CudaPlace> cuda_search_places(const CudaSearchInputs& inputs);

// The header set of a toolkit include folder: itself, then <include>/cccl (CUDA 13's layout). The
// cccl folder is listed whether or not it exists; callers keep only folders that exist. Pure.
std::vector<std::string> toolkit_header_set(const std::string& include_dir);

// "a:b::c" -> {"a", "b", "c"} (empty parts dropped). Pure.
std::vector<std::string> split_path_list(std::string_view list);

// The inputs for this process: the real environment, this library's own folder (dladdr), the
// virtual environment's site-packages and the build-time toolkit.
CudaSearchInputs process_cuda_search_inputs();

}  // namespace metrale
