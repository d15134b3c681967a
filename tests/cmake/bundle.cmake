# bundle.cmake: the ahead-of-time bundle end to end (tests/cli/bundle_load.cpp): built by the
# CLI, then served with NVRTC hidden and an empty disk cache, on a stub device and the host;
# tampered entries skipped and named.
if(NOT TARGET metrale-jit)
  return()
endif()
add_executable(metrale_bundle_load ${PROJECT_SOURCE_DIR}/tests/cli/bundle_load.cpp)
target_link_libraries(metrale_bundle_load PRIVATE metrale::jit metrale_warnings)
target_include_directories(metrale_bundle_load PRIVATE ${PROJECT_SOURCE_DIR}/tests ${PROJECT_SOURCE_DIR}/src)
target_compile_definitions(metrale_bundle_load PRIVATE METRALE_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
add_test(NAME bundle_serves_without_nvrtc COMMAND metrale_bundle_load $<TARGET_FILE:metrale-jit>)
set_tests_properties(bundle_serves_without_nvrtc PROPERTIES TIMEOUT 300 LABELS cache ENVIRONMENT
                     "METRALE_NVRTC_LIBRARY=/nonexistent/metrale-test/libnvrtc.so.13")
