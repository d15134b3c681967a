# alloc.cmake: the per-call allocation count (tests/alloc): its own executable, since it replaces
# the global operator new, which would otherwise count for every unit test.
add_executable(metrale_alloc_tests ${PROJECT_SOURCE_DIR}/tests/alloc/call_alloc_test.cpp
                                   ${PROJECT_SOURCE_DIR}/tests/unit/main.cpp)
target_link_libraries(metrale_alloc_tests PRIVATE metrale::jit Catch2::Catch2 Threads::Threads metrale_warnings)
target_include_directories(metrale_alloc_tests PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/tests)
catch_discover_tests(metrale_alloc_tests EXTRA_ARGS -w NoAssertions
                     PROPERTIES ENVIRONMENT "METRALE_CACHE_DIR=${PROJECT_BINARY_DIR}/test-cache")
