# The C ABI from C: a C99 program that includes only metrale/metrale.h and links libmetrale.so.
add_executable(metrale_capi_host_ops ${PROJECT_SOURCE_DIR}/tests/capi/capi_host_ops.c)
set_target_properties(metrale_capi_host_ops PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
target_compile_options(metrale_capi_host_ops PRIVATE -Wall -Wextra -Wpedantic $<$<BOOL:${METRALE_WERROR}>:-Werror>)
target_link_libraries(metrale_capi_host_ops PRIVATE metrale_c m)
add_test(NAME capi_c99_host_ops COMMAND metrale_capi_host_ops)
set_tests_properties(capi_c99_host_ops PROPERTIES ENVIRONMENT "METRALE_CACHE_DIR=${PROJECT_BINARY_DIR}/test-cache"
                                                  PASS_REGULAR_EXPRESSION "all C ABI checks passed")

# The third op by name from C: gate and up as one [M][2K] row, each role against a reference in C.
add_executable(metrale_capi_host_silu ${PROJECT_SOURCE_DIR}/tests/capi/capi_host_silu.c)
set_target_properties(metrale_capi_host_silu PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
target_compile_options(metrale_capi_host_silu PRIVATE -Wall -Wextra -Wpedantic $<$<BOOL:${METRALE_WERROR}>:-Werror>)
target_link_libraries(metrale_capi_host_silu PRIVATE metrale_c m)
add_test(NAME capi_c99_host_silu COMMAND metrale_capi_host_silu)
set_tests_properties(capi_c99_host_silu PROPERTIES ENVIRONMENT "METRALE_CACHE_DIR=${PROJECT_BINARY_DIR}/test-cache"
                                                   PASS_REGULAR_EXPRESSION "all C ABI silu_mul_fp8_quant checks passed")

# The same runtime described through metrale.h: levers by name, the ops' roles and arguments, explain.
add_executable(metrale_capi_op_catalog ${PROJECT_SOURCE_DIR}/tests/capi/capi_op_catalog.c)
set_target_properties(metrale_capi_op_catalog PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
target_compile_options(metrale_capi_op_catalog PRIVATE -Wall -Wextra -Wpedantic $<$<BOOL:${METRALE_WERROR}>:-Werror>)
target_link_libraries(metrale_capi_op_catalog PRIVATE metrale_c)
add_test(NAME capi_c99_op_catalog COMMAND metrale_capi_op_catalog)
set_tests_properties(capi_c99_op_catalog PROPERTIES ENVIRONMENT "METRALE_CACHE_DIR=${PROJECT_BINARY_DIR}/test-cache"
                                                    PASS_REGULAR_EXPRESSION "all C ABI catalogue checks passed")

# A runtime shut down from C (also from inside a call's log callback): every later call is refused.
add_executable(metrale_capi_closed ${PROJECT_SOURCE_DIR}/tests/capi/capi_closed.c)
set_target_properties(metrale_capi_closed PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
target_compile_options(metrale_capi_closed PRIVATE -Wall -Wextra -Wpedantic $<$<BOOL:${METRALE_WERROR}>:-Werror>)
target_link_libraries(metrale_capi_closed PRIVATE metrale_c m)
add_test(NAME capi_c99_closed COMMAND metrale_capi_closed)
set_tests_properties(capi_c99_closed PROPERTIES ENVIRONMENT "METRALE_CACHE_DIR=${PROJECT_BINARY_DIR}/test-cache"
                                                PASS_REGULAR_EXPRESSION "all C ABI closed checks passed")

# The README's C, Python and Rust examples are the tested files' marked regions, verbatim.
find_package(Python 3.9 COMPONENTS Interpreter QUIET)
if(Python_Interpreter_FOUND)
  add_test(NAME readme_examples_are_tested COMMAND ${Python_EXECUTABLE}
                                                   ${PROJECT_SOURCE_DIR}/tests/scripts/check_readme_examples.py
                                                   ${PROJECT_SOURCE_DIR})
endif()

# metrale_runtime_options.bundle_dirs: a bundle built by the CLI serves a compile with NVRTC hidden.
if(TARGET metrale-jit)
  add_executable(metrale_capi_bundle_dir ${PROJECT_SOURCE_DIR}/tests/capi/capi_bundle_dir.c)
  set_target_properties(metrale_capi_bundle_dir PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
  target_compile_options(metrale_capi_bundle_dir PRIVATE -Wall -Wextra -Wpedantic
                                                         $<$<BOOL:${METRALE_WERROR}>:-Werror>)
  target_link_libraries(metrale_capi_bundle_dir PRIVATE metrale_c)
  add_test(NAME capi_bundle_dir COMMAND metrale_capi_bundle_dir $<TARGET_FILE:metrale-jit>)
  set_tests_properties(capi_bundle_dir PROPERTIES TIMEOUT 300 LABELS cache ENVIRONMENT
                       "METRALE_NVRTC_LIBRARY=/nonexistent/metrale-test/libnvrtc.so.13"
                       PASS_REGULAR_EXPRESSION "all C ABI bundle checks passed")
endif()

# An engine's kernel on the host backend through libmetrale.so: compiled at run time by the host
# JIT, whose object reaches the prelude without any symbol libmetrale.so exports.
add_executable(metrale_capi_host_jit ${PROJECT_SOURCE_DIR}/tests/capi/capi_host_jit.c)
set_target_properties(metrale_capi_host_jit PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
target_compile_options(metrale_capi_host_jit PRIVATE -Wall -Wextra -Wpedantic $<$<BOOL:${METRALE_WERROR}>:-Werror>)
target_link_libraries(metrale_capi_host_jit PRIVATE metrale_c)
set(metrale_capi_jit_cache ${PROJECT_BINARY_DIR}/capi-host-jit-cache)
add_test(NAME capi_host_jit COMMAND sh -c "rm -rf '${metrale_capi_jit_cache}' && exec \"$0\" '${metrale_capi_jit_cache}'"
                                    $<TARGET_FILE:metrale_capi_host_jit>)
set_tests_properties(capi_host_jit PROPERTIES PASS_REGULAR_EXPRESSION "all C ABI host JIT checks passed")

# ABI 8's tuning tables from C: metrale_runtime_tune writes one, options.tuning_table reads it,
# explain's threshold_origins names its row; a version-7 options or explanation struct still works.
add_executable(metrale_capi_tuning ${PROJECT_SOURCE_DIR}/tests/capi/capi_tuning.c)
set_target_properties(metrale_capi_tuning PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
target_compile_options(metrale_capi_tuning PRIVATE -Wall -Wextra -Wpedantic $<$<BOOL:${METRALE_WERROR}>:-Werror>)
target_link_libraries(metrale_capi_tuning PRIVATE metrale_c)
add_test(NAME capi_c99_tuning COMMAND metrale_capi_tuning)
set_tests_properties(capi_c99_tuning PROPERTIES ENVIRONMENT "METRALE_CACHE_DIR=${PROJECT_BINARY_DIR}/test-cache"
                                                PASS_REGULAR_EXPRESSION "all C ABI tuning checks passed")
