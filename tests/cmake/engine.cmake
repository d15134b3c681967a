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
