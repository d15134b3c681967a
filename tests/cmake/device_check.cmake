# The device check's dry run (tools/device_check.sh --dry-run) against this build tree, so the
# one-call device script cannot rot on tasks that have no GPU: the bench starts, says "no
# device" (77), runs its host emulation and --sanity, peers.py parses and plans, results.json
# is written. Uses the already-built binaries; rebuilds nothing.
if(TARGET metrale-ops-bench)
  if(TARGET metrale_gpu_tests)
    set(METRALE_DRY_RUN_GPU_TESTS $<TARGET_FILE:metrale_gpu_tests>)
  else()
    set(METRALE_DRY_RUN_GPU_TESTS none)
  endif()
  add_test(NAME device_check_dry_run
           COMMAND bash ${PROJECT_SOURCE_DIR}/tools/device_check.sh --dry-run --bench $<TARGET_FILE:metrale-ops-bench>
                   --gpu-tests ${METRALE_DRY_RUN_GPU_TESTS})
  set_tests_properties(device_check_dry_run PROPERTIES TIMEOUT 120 LABELS device
                       ENVIRONMENT "METRALE_CACHE_DIR=${PROJECT_BINARY_DIR}/test-cache")
endif()
