# The kernels' benchmark metrale-ops-bench (tools/bench/ops_bench_*.cpp): copy ceiling, twin vs
# parent, Runtime::open cold/warm/hot; --host runs it on the host backend. A tool, not a test
# (tests/cmake/device_check.cmake runs its --host mode through the device check's dry run).
find_package(CLI11 REQUIRED)
file(GLOB METRALE_OPS_BENCH_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/bench/ops_bench_*.cpp)
add_executable(metrale-ops-bench ${METRALE_OPS_BENCH_SOURCES})
target_link_libraries(metrale-ops-bench PRIVATE metrale::jit CLI11::CLI11 metrale_warnings ${CMAKE_DL_LIBS})
# The temporary cache directories of the cold/warm Runtime::open timings come from the tests' helper.
target_include_directories(metrale-ops-bench PRIVATE ${PROJECT_SOURCE_DIR}/tests)
