# CTest tests of an engine's kernels seen by the CLI, which has no engine code: a target file
# (METRALE_HARDWARE_DIR) declares them in full, their source comes from METRALE_TEMPLATE_DIR.
if(NOT TARGET metrale-jit)
  return()
endif()
set(METRALE_ENGINE_DATA ${PROJECT_SOURCE_DIR}/tests/data/engine)
set(METRALE_ENGINE_ENV
    "METRALE_HARDWARE_DIR=${METRALE_ENGINE_DATA}/hardware_full|METRALE_TEMPLATE_DIR=${METRALE_ENGINE_DATA}/templates|METRALE_CACHE_DIR=${PROJECT_BINARY_DIR}/cli-work/engine-cache")
metrale_cli_test(targets_lists_engine_kernels 0 "engine_test.*8\\.6.*engine_mirror b128, engine_mirror_twin b128g4"
                 ARGS targets ENV ${METRALE_ENGINE_ENV})
metrale_cli_test(build_compiles_engine_kernels 0
                 "engine_mirror +b128 +sm_86 .*engine_mirror_twin +b128g4 +sm_86 .*2 kernels, 0 failed" ARGS build
                 --target engine_test ENV ${METRALE_ENGINE_ENV})

# The test engine's op as a plug-in (tests/data/engine/engine_ops.cpp) that `metrale-jit --ops`
# loads: explain, run and selftest serve it like the library's ops, on the host backend (its
# kernels compiled by the host JIT from the source the plug-in embeds).
file(READ ${METRALE_ENGINE_DATA}/templates/engine_mirror.cuh METRALE_ENGINE_MIRROR_SOURCE)
configure_file(${METRALE_ENGINE_DATA}/engine_source.hpp.in ${PROJECT_BINARY_DIR}/engine_ops/engine_source.hpp @ONLY)
add_library(metrale_test_engine_ops MODULE ${METRALE_ENGINE_DATA}/engine_ops.cpp)
target_link_libraries(metrale_test_engine_ops PRIVATE metrale::jit metrale_warnings)
target_include_directories(metrale_test_engine_ops PRIVATE ${PROJECT_SOURCE_DIR}/tests
                                                           ${PROJECT_BINARY_DIR}/engine_ops)
# Only metrale_declare_ops leaves the plug-in; the library code it carries stays its own.
set_target_properties(metrale_test_engine_ops PROPERTIES CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
target_link_options(metrale_test_engine_ops PRIVATE -Wl,--exclude-libs,ALL)
add_dependencies(metrale-jit metrale_test_engine_ops)
set(METRALE_ENGINE_OPS "--ops|$<TARGET_FILE:metrale_test_engine_ops>")
set(METRALE_ENGINE_OPS_ENV
    "METRALE_HARDWARE_DIR=${METRALE_ENGINE_DATA}/hardware_ops|METRALE_CACHE_DIR=${PROJECT_BINARY_DIR}/cli-work/engine-ops-cache")
metrale_cli_test(engine_op_explain_twin 0 "runs   engine_mirror_twin .the twin." ARGS explain mirror --target engine_test
                 --m 64 ${METRALE_ENGINE_OPS} ENV ${METRALE_ENGINE_OPS_ENV})
metrale_cli_test(engine_op_explain_json_ragged 0 "\"reject\": \"chunks not a multiple of the twin's groups\"" ARGS
                 explain engine_mirror_scale --target engine_test --m 37 --json ${METRALE_ENGINE_OPS}
                 ENV ${METRALE_ENGINE_OPS_ENV})
metrale_cli_test(engine_op_explain_min_m 0 "engine_mirror_scale runs engine_mirror_twin for M >= 8" ARGS explain
                 engine_mirror_scale --target engine_test ${METRALE_ENGINE_OPS} ENV ${METRALE_ENGINE_OPS_ENV})
metrale_cli_test(engine_op_explain_lever_off 0 "reason lever off" ARGS explain mirror --target engine_test --m 64
                 --lever off ${METRALE_ENGINE_OPS} ENV ${METRALE_ENGINE_OPS_ENV})
metrale_cli_test(engine_op_unknown_without_plugin_exits_2 2 "unknown op 'mirror'" ARGS explain mirror --target hopper
                 --m 64)
metrale_cli_test(engine_op_missing_plugin_exits_2 2 "--ops /nonexistent/libnone.so: cannot load it" ARGS explain mirror
                 --target hopper --m 64 --ops /nonexistent/libnone.so)
metrale_cli_test(engine_op_selftest 0 "engine_mirror_scale +twin +engine_mirror_twin +M=64 +bytes == parent +PASS.*0 failed"
                 ARGS selftest --target engine_test --op mirror ${METRALE_ENGINE_OPS} ENV ${METRALE_ENGINE_OPS_ENV})
add_test(NAME cli_engine_op_run
         COMMAND metrale_cli_engine_op_run $<TARGET_FILE:metrale-jit> $<TARGET_FILE:metrale_test_engine_ops>
                 ${METRALE_ENGINE_DATA}/hardware_ops ${PROJECT_BINARY_DIR}/cli-work/engine-op-run)
add_executable(metrale_cli_engine_op_run ${PROJECT_SOURCE_DIR}/tests/cli/engine_op_run.cpp)
target_link_libraries(metrale_cli_engine_op_run PRIVATE metrale::jit metrale_warnings)
