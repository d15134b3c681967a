# metrale-nvrtc-by-hand (tools/bench/nvrtc_by_hand.cpp): NVRTC driven by hand on the set
# `metrale-jit targets --json` names, the cold-start anchor of tools/bench/startup_times.sh.
# It links libnvrtc directly (as an engine calling NVRTC by hand would); no outside code.
find_package(Threads REQUIRED)
find_package(nlohmann_json REQUIRED)
add_executable(metrale-nvrtc-by-hand ${CMAKE_CURRENT_SOURCE_DIR}/bench/nvrtc_by_hand.cpp)
target_include_directories(metrale-nvrtc-by-hand SYSTEM PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
target_link_libraries(metrale-nvrtc-by-hand PRIVATE ${METRALE_NVRTC_LIBRARY} nlohmann_json::nlohmann_json
                                                    Threads::Threads metrale_warnings)
