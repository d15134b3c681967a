# metrale-call-bench (tools/bench/call_bench.cpp): the library's time per op call at M = 1 (host
# backend and CUDA path, the device's launch left out); goal under 1 us. A tool, not a test.
add_executable(metrale-call-bench ${CMAKE_CURRENT_SOURCE_DIR}/bench/call_bench.cpp)
target_link_libraries(metrale-call-bench PRIVATE metrale::jit metrale_warnings)
target_include_directories(metrale-call-bench PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/tests)
