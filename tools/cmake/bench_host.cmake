# metrale-host-bench (tools/bench/host_bench.cpp): the host backend's sync cost and the BA-gates
# parent and twin at the prefill shape, timed on the CPU. A tool, not a test: it asserts only that
# the twin's bytes equal the parent's (exit 1 otherwise).
# --corpus (host_bench_corpus.cpp): the kernels of tests/data/corpus through the host JIT, per kernel.
add_executable(metrale-host-bench ${CMAKE_CURRENT_SOURCE_DIR}/bench/host_bench.cpp
                                  ${CMAKE_CURRENT_SOURCE_DIR}/bench/host_bench_corpus.cpp)
target_link_libraries(metrale-host-bench PRIVATE metrale::jit metrale_warnings)
target_include_directories(metrale-host-bench PRIVATE ${PROJECT_SOURCE_DIR}/tests ${METRALE_TEMPLATE_DIRS})
target_compile_definitions(metrale-host-bench PRIVATE METRALE_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
# The kernels move bf16 elements through vector words, as CUDA code does.
target_compile_options(metrale-host-bench PRIVATE -fno-strict-aliasing)
