# metrale-pch-bench (tools/bench/pch_bench.cpp): NVRTC time per instantiation with and without
# precompiled headers (BENCHMARKS.md, "Precompiled headers"). A tool, not a test.
add_executable(metrale-pch-bench ${CMAKE_CURRENT_SOURCE_DIR}/bench/pch_bench.cpp)
target_link_libraries(metrale-pch-bench PRIVATE metrale::jit metrale_warnings)
target_include_directories(metrale-pch-bench PRIVATE ${PROJECT_SOURCE_DIR}/src)
