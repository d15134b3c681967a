# profiled_host.cmake: metrale_profiled_host_sources(FILES...) compiles host-kernel translation
# units so that every load and store they make calls the recorder of src/host/access_trace.cpp
# (g++'s kernel AddressSanitizer in outline mode, no sanitizer runtime), and marks them
# METRALE_HOST_PROFILED for the prelude. The project's own sanitizers are switched off for these
# units only: the kernel and the user-space AddressSanitizer cannot share one unit, and the
# recording must not depend on which sanitizer build this is. Recovery is asked for explicitly:
# sanitizer builds pass -fno-sanitize-recover=all, which would turn the callbacks into the
# sanitizer runtime's aborting __asan_loadN (checks, not records).
function(metrale_profiled_host_sources)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    set(flags -fno-sanitize=all -fsanitize=kernel-address -fsanitize-recover=kernel-address
              --param=asan-instrumentation-with-call-threshold=0
              --param=asan-stack=0 --param=asan-globals=0)
  elseif(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    set(flags -fno-sanitize=all -fsanitize=kernel-address -fsanitize-recover=kernel-address -mllvm
              -asan-instrumentation-with-call-threshold=0 -mllvm
              -asan-stack=0 -mllvm -asan-globals=0)
  else()
    message(FATAL_ERROR "profiled host kernels need g++ or clang (kernel AddressSanitizer callbacks)")
  endif()
  set_source_files_properties(${ARGN} PROPERTIES COMPILE_OPTIONS "-fno-strict-aliasing;${flags}"
                                                 COMPILE_DEFINITIONS METRALE_HOST_PROFILED=1)
endfunction()
