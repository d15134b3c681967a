# cuda_headers.cmake: where the build finds the few CUDA headers it compiles against (cuda.h and
# cudaTypedefs.h for the Driver API's types, vector_types.h and vector_functions.h for the host
# prelude). Nothing is linked: the driver and NVRTC are dlopen'ed at run time, and NVRTC's C ABI
# is declared by the library itself (src/jit/nvrtc_library.hpp), so no nvrtc.h is needed.
# Order (the first that has cuda.h):
#   1. -DMETRALE_CUDA_INCLUDE_DIRS=<folder>[;<folder>...] (explicit);
#   2. a system toolkit (find_package(CUDAToolkit), optional: /usr/local/cuda, $CUDA_HOME, nvcc on PATH);
#   3. the NVIDIA wheels in the build's Python environment (pip install nvidia-cuda-runtime
#      nvidia-cuda-crt: <site-packages>/nvidia/cu13/include; vector_types.h includes
#      crt/host_defines.h, which only the crt wheel has; CUDA 12 keeps crt/ in the large nvcc wheel).
# Sets: METRALE_CUDA_BUILD_INCLUDE_DIRS (a BUILD_INTERFACE include list: no consumer of the
# installed package ever sees it), METRALE_CUDA_MAJOR (from cuda.h's CUDA_VERSION), and, only
# for a system toolkit, METRALE_CUDA_BAKED_INCLUDE_DIR / METRALE_NVRTC_BUILD_PATH: the last place
# the library looks at run time (a wheel's folder in pip's throw-away build environment is not
# worth remembering).
set(METRALE_CUDA_INCLUDE_DIRS "" CACHE STRING "CUDA include folders (cuda.h); empty: a system toolkit, else the wheels")
set(METRALE_CUDA_BUILD_INCLUDE_DIRS "")
set(METRALE_CUDA_BAKED_INCLUDE_DIR "")
set(METRALE_NVRTC_BUILD_PATH "")
set(METRALE_NVRTC_LIBRARY "")
set(metrale_cuda_origin "")

if(METRALE_CUDA_INCLUDE_DIRS)
  set(METRALE_CUDA_BUILD_INCLUDE_DIRS ${METRALE_CUDA_INCLUDE_DIRS})
  set(metrale_cuda_origin "METRALE_CUDA_INCLUDE_DIRS")
else()
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND)
    set(METRALE_CUDA_BUILD_INCLUDE_DIRS ${CUDAToolkit_INCLUDE_DIRS})
    list(GET CUDAToolkit_INCLUDE_DIRS 0 METRALE_CUDA_BAKED_INCLUDE_DIR)
    set(metrale_cuda_origin "the system toolkit ${CUDAToolkit_BIN_DIR}/..")
    find_library(metrale_nvrtc_found nvrtc HINTS ${CUDAToolkit_LIBRARY_DIR} NO_CACHE)
    if(metrale_nvrtc_found)
      set(METRALE_NVRTC_LIBRARY ${metrale_nvrtc_found})  # tools/bench's NVRTC-by-hand anchor links it
      get_filename_component(METRALE_NVRTC_BUILD_PATH "${metrale_nvrtc_found}" REALPATH)
    endif()
  else()
    find_package(Python3 COMPONENTS Interpreter QUIET)
    if(Python3_Interpreter_FOUND)
      execute_process(
        COMMAND ${Python3_EXECUTABLE} -c
                "import site, sys; print(';'.join(p for p in [*site.getsitepackages(), site.getusersitepackages(), *sys.path] if p))"
        OUTPUT_VARIABLE metrale_python_paths OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
      foreach(dir IN LISTS metrale_python_paths)
        foreach(layout nvidia/cu13/include nvidia/cuda_runtime/include)
          if(NOT METRALE_CUDA_BUILD_INCLUDE_DIRS AND EXISTS ${dir}/${layout}/cuda.h
             AND EXISTS ${dir}/${layout}/cudaTypedefs.h AND EXISTS ${dir}/${layout}/crt/host_defines.h)
            set(METRALE_CUDA_BUILD_INCLUDE_DIRS ${dir}/${layout})
            set(metrale_cuda_origin "the Python wheel in ${dir}")
          endif()
        endforeach()
      endforeach()
    endif()
  endif()
endif()

set(metrale_cuda_first "")
if(METRALE_CUDA_BUILD_INCLUDE_DIRS)
  list(GET METRALE_CUDA_BUILD_INCLUDE_DIRS 0 metrale_cuda_first)
endif()
if(NOT metrale_cuda_first OR NOT EXISTS ${metrale_cuda_first}/cuda.h)
  message(
    FATAL_ERROR
      "metrale-jit needs CUDA's headers (cuda.h, cudaTypedefs.h, vector_types.h) to build, from any one of: "
      "NVIDIA's wheels ('pip install nvidia-cuda-runtime nvidia-cuda-crt' into the Python that configures this build), "
      "a CUDA toolkit (/usr/local/cuda, or CUDA_HOME), or -DMETRALE_CUDA_INCLUDE_DIRS=<folder with cuda.h>. "
      "No CUDA library is linked: NVRTC and the driver are found at run time.")
endif()
file(STRINGS ${metrale_cuda_first}/cuda.h metrale_cuda_version_line REGEX "^#define CUDA_VERSION [0-9]+")
string(REGEX MATCH "[0-9]+" metrale_cuda_version "${metrale_cuda_version_line}")
math(EXPR METRALE_CUDA_MAJOR "${metrale_cuda_version} / 1000")
message(STATUS "metrale: CUDA ${metrale_cuda_version} headers from ${metrale_cuda_origin} (${metrale_cuda_first})")
