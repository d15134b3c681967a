# The start-up benches of tools/bench/startup_times.sh. metrale-nvrtc-by-hand
# (tools/bench/nvrtc_by_hand.cpp): NVRTC driven by hand on the set `metrale-jit targets --json`
# names, the cold-start anchor; it links libnvrtc directly (as an engine calling NVRTC by hand
# would); no outside code.
find_package(Threads REQUIRED)
find_package(nlohmann_json REQUIRED)
# Only where a system toolkit gave a libnvrtc to link (cmake/cuda_headers.cmake).
if(METRALE_NVRTC_LIBRARY)
  add_executable(metrale-nvrtc-by-hand ${CMAKE_CURRENT_SOURCE_DIR}/bench/nvrtc_by_hand.cpp)
  target_include_directories(metrale-nvrtc-by-hand SYSTEM PRIVATE ${METRALE_CUDA_BUILD_INCLUDE_DIRS})
  target_link_libraries(metrale-nvrtc-by-hand PRIVATE ${METRALE_NVRTC_LIBRARY} nlohmann_json::nlohmann_json
                                                      Threads::Threads metrale_warnings)
endif()

# metrale-first-op (tools/bench/first_op.cpp): process start to the first op call with background
# variants, on a stub sm_90 device; timed by tools/bench/startup_times.sh beside the anchor.
add_executable(metrale-first-op ${CMAKE_CURRENT_SOURCE_DIR}/bench/first_op.cpp)
target_link_libraries(metrale-first-op PRIVATE metrale::jit metrale_warnings)
