// nvrtc_library.hpp (private): libnvrtc loaded with dlopen the first time it is needed,
// like the driver, so a process whose kernels all come from memory, a bundle or the disk
// cache never needs the CUDA toolkit.
// Where it is looked for: the places of jit/cuda_search.hpp, in their order (METRALE_NVRTC_LIBRARY
// when set is the only one, so a test can hide NVRTC with a path that does not exist; then the
// Python environment's NVIDIA wheels, $CUDA_HOME, $CUDA_PATH, the loader's search path,
// /usr/local/cuda, the build's toolkit). Both CUDA majors are accepted (this build's first): the
// entry points used exist, with these signatures, in NVRTC 12 and 13.
// Invariants: loaded at most once per process (never unloaded); "not found" is a state with a
// reason naming every file tried, never an exception; every entry point is resolved or the
// library counts as absent, except the precompiled-header (PCH) ones of CUDA 12.8+, which are
// optional (NvrtcApi::pch_available(); an older NVRTC compiles without PCH); the choice (file,
// version, place) is logged once, at info level.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "jit/cuda_search.hpp"

namespace metrale {

// NVRTC's C ABI, declared here rather than taken from <nvrtc.h>, so the library builds with no
// NVRTC headers at all (the nvidia-cuda-runtime wheel has none; only the 140 MB NVRTC wheel
// does). These are the prototypes of NVRTC 12 and 13's nvrtc.h, unchanged since CUDA 11.1 (the
// CUBIN entry points), plus the optional PCH entry points of 12.8+; nvrtcResult is a C enum (int)
// whose values read here are success and the PCH creation statuses.
// tests/unit/jit_nvrtc_abi_test.cpp checks them against <nvrtc.h> where that header exists.
enum nvrtcResult : int {
  NVRTC_SUCCESS = 0,
  NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED = 13,
  NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED = 14,
  NVRTC_ERROR_PCH_CREATE = 15,
};
struct _nvrtcProgram;
using nvrtcProgram = _nvrtcProgram*;

struct NvrtcApi {
  nvrtcResult (*version)(int* major, int* minor) = nullptr;
  nvrtcResult (*get_num_supported_archs)(int* count) = nullptr;
  nvrtcResult (*get_supported_archs)(int* archs) = nullptr;
  const char* (*get_error_string)(nvrtcResult result) = nullptr;
  nvrtcResult (*create_program)(nvrtcProgram* program, const char* source, const char* name, int header_count,
                                const char* const* headers, const char* const* include_names) = nullptr;
  nvrtcResult (*destroy_program)(nvrtcProgram* program) = nullptr;
  nvrtcResult (*add_name_expression)(nvrtcProgram program, const char* const name_expression) = nullptr;
  nvrtcResult (*compile_program)(nvrtcProgram program, int option_count, const char* const* options) = nullptr;
  nvrtcResult (*get_program_log_size)(nvrtcProgram program, std::size_t* size) = nullptr;
  nvrtcResult (*get_program_log)(nvrtcProgram program, char* log) = nullptr;
  nvrtcResult (*get_lowered_name)(nvrtcProgram program, const char* const name_expression,
                                  const char** lowered_name) = nullptr;
  nvrtcResult (*get_ptx_size)(nvrtcProgram program, std::size_t* size) = nullptr;
  nvrtcResult (*get_ptx)(nvrtcProgram program, char* ptx) = nullptr;
  nvrtcResult (*get_cubin_size)(nvrtcProgram program, std::size_t* size) = nullptr;
  nvrtcResult (*get_cubin)(nvrtcProgram program, char* cubin) = nullptr;
  // Optional (CUDA 12.8+): null in an older NVRTC. All four or none are set.
  nvrtcResult (*get_pch_heap_size)(std::size_t* size) = nullptr;
  nvrtcResult (*set_pch_heap_size)(std::size_t size) = nullptr;
  nvrtcResult (*get_pch_create_status)(nvrtcProgram program) = nullptr;
  nvrtcResult (*get_pch_heap_size_required)(nvrtcProgram program, std::size_t* size) = nullptr;

  [[nodiscard]] bool pch_available() const { return get_pch_create_status != nullptr; }
};

struct NvrtcLibrary {
  const NvrtcApi* api = nullptr;          // null when no NVRTC was found
  std::string reason;                     // why not: "no NVRTC was found: ..."
  std::string path;                       // the file loaded (as the dynamic loader resolved it)
  std::string version;                    // "13-0"
  std::string identity;                   // "13-0+<8 hex>": the version and the file (path, size)
  std::string origin;                     // the place it came from (CudaPlace::origin)
  std::vector<std::string> include_dirs;  // that place's header set (may not exist; see cuda_toolkit)
  std::vector<std::string> tried;         // every file tried before it, with dlopen's reason

  [[nodiscard]] bool available() const { return api != nullptr; }
};

// Loads NVRTC on the first call (thread-safe); later calls return the same state.
const NvrtcLibrary& nvrtc_library();

// Walks `places` in order and loads the first NVRTC that opens and resolves (not cached: the
// process-wide one is nvrtc_library()). A file that is absent is skipped without a dlopen.
NvrtcLibrary load_nvrtc_library(const std::vector<CudaPlace>& places);

}  // namespace metrale
