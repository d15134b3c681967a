# metrale-jitify2-startup (tools/bench/jitify2_startup.cpp): NVIDIA Jitify2 compiling the hopper
# kernel set, the comparison point of tools/bench/startup_times.sh. Jitify2 is not a dependency
# and is not in this repository: built only when -DMETRALE_JITIFY2_HEADER=/path/to/jitify2.hpp.
set(METRALE_JITIFY2_HEADER "" CACHE FILEPATH "jitify2.hpp, to build metrale-jitify2-startup (a benchmark only)")
if(NOT METRALE_JITIFY2_HEADER)
  return()
endif()
if(NOT EXISTS "${METRALE_JITIFY2_HEADER}")
  message(FATAL_ERROR "METRALE_JITIFY2_HEADER=${METRALE_JITIFY2_HEADER} does not exist")
endif()
find_package(Threads REQUIRED)
get_filename_component(METRALE_JITIFY2_DIR "${METRALE_JITIFY2_HEADER}" DIRECTORY)
add_executable(metrale-jitify2-startup ${CMAKE_CURRENT_SOURCE_DIR}/bench/jitify2_startup.cpp)
# Its header is third-party: no project warnings on it; it loads NVRTC itself (dlopen).
target_include_directories(metrale-jitify2-startup SYSTEM PRIVATE ${METRALE_JITIFY2_DIR} ${CUDAToolkit_INCLUDE_DIRS})
target_link_libraries(metrale-jitify2-startup PRIVATE ${CMAKE_DL_LIBS} Threads::Threads)
