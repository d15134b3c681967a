# profile.cmake: the profile tests' kernels with hand-counted traffic, compiled as a profiled
# host unit (cmake/profiled_host.cmake) into the unit tests.
set(METRALE_PROFILE_TEST_KERNELS ${PROJECT_SOURCE_DIR}/tests/data/profile/traffic_kernels.cpp)
target_sources(metrale_unit_tests PRIVATE ${METRALE_PROFILE_TEST_KERNELS})
metrale_profiled_host_sources(${METRALE_PROFILE_TEST_KERNELS})
