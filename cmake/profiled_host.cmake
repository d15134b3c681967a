# profiled_host.cmake: the one list of flags that makes a host-kernel translation unit a profiled
# one, so that every load and store it makes calls the recorder of src/host/access_trace.cpp
# (the compiler's kernel AddressSanitizer in outline mode, no sanitizer runtime), and the define
# that marks it METRALE_HOST_PROFILED for the prelude. Two users: metrale_profiled_host_sources()
# (the built-in profiled unit, compiled by CMake's compiler) and the generated header
# host/profiled_host_flags.hpp, from which the host JIT (src/host/host_jit.cpp) compiles a profiled
# variant with the system compiler at run time; both lists are written there, since that compiler
# may be the other family. The project's own sanitizers are switched off for these units only:
# the kernel and the user-space AddressSanitizer cannot share one unit, and the recording must
# not depend on which sanitizer build this is. Recovery is asked for explicitly: sanitizer builds
# pass -fno-sanitize-recover=all, which would turn the callbacks into the sanitizer runtime's
# aborting __asan_loadN (checks, not records).
set(METRALE_PROFILED_HOST_FLAGS_GNU
    -fno-strict-aliasing -fno-sanitize=all -fsanitize=kernel-address -fsanitize-recover=kernel-address
    --param=asan-instrumentation-with-call-threshold=0 --param=asan-stack=0 --param=asan-globals=0)
set(METRALE_PROFILED_HOST_FLAGS_CLANG
    -fno-strict-aliasing -fno-sanitize=all -fsanitize=kernel-address -fsanitize-recover=kernel-address -mllvm
    -asan-instrumentation-with-call-threshold=0 -mllvm -asan-stack=0 -mllvm -asan-globals=0)
set(METRALE_PROFILED_HOST_DEFINE METRALE_HOST_PROFILED=1)

# The generated header: each list as a C++ array of string literals.
function(metrale_profiled_flags_array output list)
  set(items "")
  foreach(flag IN LISTS list)
    string(APPEND items "\"${flag}\", ")
  endforeach()
  set(${output} "${items}" PARENT_SCOPE)
endfunction()
metrale_profiled_flags_array(METRALE_PROFILED_HOST_FLAGS_GNU_ITEMS "${METRALE_PROFILED_HOST_FLAGS_GNU}")
metrale_profiled_flags_array(METRALE_PROFILED_HOST_FLAGS_CLANG_ITEMS "${METRALE_PROFILED_HOST_FLAGS_CLANG}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/profiled_host_flags.hpp.in
               ${METRALE_GENERATED_DIR}/host/profiled_host_flags.hpp @ONLY)

function(metrale_profiled_host_sources)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    set(flags ${METRALE_PROFILED_HOST_FLAGS_GNU})
  elseif(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    set(flags ${METRALE_PROFILED_HOST_FLAGS_CLANG})
  else()
    message(FATAL_ERROR "profiled host kernels need g++ or clang (kernel AddressSanitizer callbacks)")
  endif()
  # Its own instrumentation flags match no target's precompiled header (tests/CMakeLists.txt).
  set_source_files_properties(${ARGN} PROPERTIES COMPILE_OPTIONS "${flags}"
                                                 COMPILE_DEFINITIONS ${METRALE_PROFILED_HOST_DEFINE}
                                                 SKIP_PRECOMPILE_HEADERS ON)
endfunction()
