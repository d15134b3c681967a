// nvrtc_library.hpp (private): libnvrtc loaded with dlopen the first time it is needed,
// like the driver, so a process whose kernels all come from memory, a bundle or the disk
// cache never needs the CUDA toolkit.
// Where it is looked for: METRALE_NVRTC_LIBRARY when set (a path or a library name; the only
// place then, so a test can hide NVRTC with a path that does not exist), else the soname of
// this build's CUDA major (the loader's search path), else the libnvrtc found at build time.
// Invariants: loaded at most once per process (never unloaded); "not found" is a state with a
// reason naming every place tried, never an exception; every entry point is resolved or the
// library counts as absent.
#pragma once

#include <nvrtc.h>  // types only: nothing links to libnvrtc

#include <string>
#include <vector>

namespace metrale {

struct NvrtcApi {
  decltype(&::nvrtcVersion) version = nullptr;
  decltype(&::nvrtcGetNumSupportedArchs) get_num_supported_archs = nullptr;
  decltype(&::nvrtcGetSupportedArchs) get_supported_archs = nullptr;
  decltype(&::nvrtcGetErrorString) get_error_string = nullptr;
  decltype(&::nvrtcCreateProgram) create_program = nullptr;
  decltype(&::nvrtcDestroyProgram) destroy_program = nullptr;
  decltype(&::nvrtcAddNameExpression) add_name_expression = nullptr;
  decltype(&::nvrtcCompileProgram) compile_program = nullptr;
  decltype(&::nvrtcGetProgramLogSize) get_program_log_size = nullptr;
  decltype(&::nvrtcGetProgramLog) get_program_log = nullptr;
  decltype(&::nvrtcGetLoweredName) get_lowered_name = nullptr;
  decltype(&::nvrtcGetPTXSize) get_ptx_size = nullptr;
  decltype(&::nvrtcGetPTX) get_ptx = nullptr;
  decltype(&::nvrtcGetCUBINSize) get_cubin_size = nullptr;
  decltype(&::nvrtcGetCUBIN) get_cubin = nullptr;
};

struct NvrtcLibrary {
  const NvrtcApi* api = nullptr;  // null when no NVRTC was found
  std::string reason;             // why not: "no NVRTC was found: ..."
  std::string path;               // the file loaded (as the dynamic loader resolved it)
  std::string version;            // "13-0"
  std::string identity;           // "13-0+<8 hex>": the version and the file (path, size)

  [[nodiscard]] bool available() const { return api != nullptr; }
};

// Loads NVRTC on the first call (thread-safe); later calls return the same state.
const NvrtcLibrary& nvrtc_library();

// The names tried, in order, for a METRALE_NVRTC_LIBRARY value (null or empty: unset), this
// build's CUDA major and the build-time path. Pure.
std::vector<std::string> nvrtc_candidates(const char* override_value, int cuda_major, const std::string& build_path);

}  // namespace metrale
