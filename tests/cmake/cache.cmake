# cache.cmake: the disk cache's multi-process test: 8 processes started at once on one empty
# cache directory, each storing and loading shared and own keys; all must succeed and leave
# only valid entries (no temp files).
add_executable(cache_stress ${PROJECT_SOURCE_DIR}/tests/tools/cache_stress.cpp)
target_link_libraries(cache_stress PRIVATE metrale::jit metrale_warnings)
add_test(NAME cache_multi_process COMMAND cache_stress run ${PROJECT_BINARY_DIR}/cache-stress 8 150)
set_tests_properties(cache_multi_process PROPERTIES TIMEOUT 120 LABELS cache)
