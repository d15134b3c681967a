// jit_nvrtc_abi_test.cpp: the library's own declarations of NVRTC's C ABI (jit/nvrtc_library.hpp,
// which lets it build with no nvrtc.h) are NVRTC's, checked at compile time against <nvrtc.h>
// wherever the build has that header (a system toolkit, or the nvidia-cuda-nvrtc wheel): each
// entry point's type, with nvrtc.h's nvrtcResult and nvrtcProgram mapped to the library's, is the
// field's type; and NVRTC_SUCCESS and the enum's size agree.
#include <catch2/catch.hpp>

#include "jit/nvrtc_library.hpp"

#if __has_include(<nvrtc.h>)
#include <nvrtc.h>

#include <type_traits>

namespace {

template <typename T>
struct Mapped {
  using type = T;
};
template <>
struct Mapped<::nvrtcResult> {
  using type = metrale::nvrtcResult;
};
template <>
struct Mapped<::nvrtcProgram> {
  using type = metrale::nvrtcProgram;
};
template <>
struct Mapped<::nvrtcProgram*> {
  using type = metrale::nvrtcProgram*;
};
template <typename Fn>
struct MappedFunction;
template <typename R, typename... Args>
struct MappedFunction<R (*)(Args...)> {
  using type = typename Mapped<R>::type (*)(typename Mapped<Args>::type...);
};
template <typename Fn>
using Ours = typename MappedFunction<Fn>::type;

#define METRALE_SAME_ABI(field, function) \
  static_assert(std::is_same_v<decltype(metrale::NvrtcApi::field), Ours<decltype(&::function)>>, #function)
METRALE_SAME_ABI(version, nvrtcVersion);
METRALE_SAME_ABI(get_num_supported_archs, nvrtcGetNumSupportedArchs);
METRALE_SAME_ABI(get_supported_archs, nvrtcGetSupportedArchs);
METRALE_SAME_ABI(get_error_string, nvrtcGetErrorString);
METRALE_SAME_ABI(create_program, nvrtcCreateProgram);
METRALE_SAME_ABI(destroy_program, nvrtcDestroyProgram);
METRALE_SAME_ABI(add_name_expression, nvrtcAddNameExpression);
METRALE_SAME_ABI(compile_program, nvrtcCompileProgram);
METRALE_SAME_ABI(get_program_log_size, nvrtcGetProgramLogSize);
METRALE_SAME_ABI(get_program_log, nvrtcGetProgramLog);
METRALE_SAME_ABI(get_lowered_name, nvrtcGetLoweredName);
METRALE_SAME_ABI(get_ptx_size, nvrtcGetPTXSize);
METRALE_SAME_ABI(get_ptx, nvrtcGetPTX);
METRALE_SAME_ABI(get_cubin_size, nvrtcGetCUBINSize);
METRALE_SAME_ABI(get_cubin, nvrtcGetCUBIN);
// The optional PCH entry points, where the header is 12.8's or newer (cuda.h says which).
#if __has_include(<cuda.h>)
#include <cuda.h>
#if CUDA_VERSION >= 12080
METRALE_SAME_ABI(get_pch_heap_size, nvrtcGetPCHHeapSize);
METRALE_SAME_ABI(set_pch_heap_size, nvrtcSetPCHHeapSize);
METRALE_SAME_ABI(get_pch_create_status, nvrtcGetPCHCreateStatus);
METRALE_SAME_ABI(get_pch_heap_size_required, nvrtcGetPCHHeapSizeRequired);
static_assert(static_cast<int>(::NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED) ==
              static_cast<int>(metrale::NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED));
static_assert(static_cast<int>(::NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED) ==
              static_cast<int>(metrale::NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED));
static_assert(static_cast<int>(::NVRTC_ERROR_PCH_CREATE) == static_cast<int>(metrale::NVRTC_ERROR_PCH_CREATE));
#endif
#endif
#undef METRALE_SAME_ABI
static_assert(sizeof(::nvrtcResult) == sizeof(metrale::nvrtcResult));
static_assert(static_cast<int>(::NVRTC_SUCCESS) == static_cast<int>(metrale::NVRTC_SUCCESS));

}  // namespace

TEST_CASE("the library's NVRTC declarations are nvrtc.h's", "[jit][nvrtc][cuda_search]") {
  SUCCEED("checked at compile time against <nvrtc.h>");
}
#else
TEST_CASE("the library's NVRTC declarations are nvrtc.h's", "[jit][nvrtc][cuda_search]") {
  WARN("no <nvrtc.h> in this build's CUDA headers: nothing to check against");
}
#endif
