# host.cmake: host backend checks that need their own executable. Under AddressSanitizer, a
# kernel reading past its input must be reported by ASan (the report names a heap-buffer-overflow).
if(METRALE_SANITIZE MATCHES "address")
  add_executable(metrale_host_asan_probe ${PROJECT_SOURCE_DIR}/tests/data/host/asan_probe.cpp)
  target_link_libraries(metrale_host_asan_probe PRIVATE metrale::jit metrale_warnings)
  add_test(NAME host_asan_sees_kernel_out_of_bounds COMMAND metrale_host_asan_probe)
  set_tests_properties(host_asan_sees_kernel_out_of_bounds PROPERTIES PASS_REGULAR_EXPRESSION
                                                                      "heap-buffer-overflow.*reads_past_end")
endif()

# The host tests also run the shipped kernel templates directly (timings, twin == parent).
target_include_directories(metrale_unit_tests PRIVATE ${METRALE_TEMPLATE_DIRS})
