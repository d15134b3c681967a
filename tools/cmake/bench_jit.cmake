# The JIT acquisition benchmark (cold NVRTC / warm disk / hot memory); a tool, not a test.
find_package(CLI11 REQUIRED)
add_executable(metrale-jit-bench ${CMAKE_CURRENT_SOURCE_DIR}/bench/jit_bench.cpp)
target_link_libraries(metrale-jit-bench PRIVATE metrale::jit CLI11::CLI11 metrale_warnings)
target_compile_definitions(metrale-jit-bench PRIVATE METRALE_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
