# The device check (tools/device_check.sh) without a device, so the one-call device script
# cannot rot on tasks that have no GPU:
#   device_check_dry_run         stages this build tree's binaries the way --build stages its
#                                Release build (bundled libraries, $ORIGIN RUNPATH, BUILD_INFO),
#                                proves the staged folder complete, then the dry run against it:
#                                the bench starts, says "no device" (77), runs its host emulation
#                                and --sanity, peers.py plans, results.json is written
#   device_check_fake_*          the device mode with stand-in binaries (tests/device_check):
#                                a hung step killed at its cap, every step failing, the
#                                sanitizers' own verdicts, log caps, --only, an incomplete stage
#   ops_bench_refused_kernel_rows_*  a refused kernel's bench rows say REFUSED and why (tests/device_check)
#   gpu_tests_read_no_source_path  no GPU test reads the build's source folder (only test_source_dir())
# Uses the already-built binaries; rebuilds nothing.
if(TARGET metrale-ops-bench)
  add_test(NAME device_check_dry_run
           COMMAND bash ${PROJECT_SOURCE_DIR}/tools/device_check.sh --dry-run --stage-from ${PROJECT_BINARY_DIR}
                   --stage-dir ${PROJECT_BINARY_DIR}/device-check-stage)
  set_tests_properties(device_check_dry_run PROPERTIES TIMEOUT 420 LABELS device COST 25
                       ENVIRONMENT "METRALE_CACHE_DIR=${PROJECT_BINARY_DIR}/test-cache")
  foreach(scenario hang all-fail sanitizer peers-sigterm python-abi)
    add_test(NAME device_check_fake_${scenario}
             COMMAND bash ${PROJECT_SOURCE_DIR}/tests/device_check/fake_run_test.sh ${scenario})
    # The cap guards against a hang, not for speed: 13 s alone, past 120 s with ten compiles beside it.
    set_tests_properties(device_check_fake_${scenario} PROPERTIES TIMEOUT 600 LABELS device)
  endforeach()
  add_test(NAME device_check_fake_bad_stage
           COMMAND bash ${PROJECT_SOURCE_DIR}/tests/device_check/fake_run_test.sh bad-stage ${PROJECT_BINARY_DIR})
  set_tests_properties(device_check_fake_bad_stage PROPERTIES TIMEOUT 120 LABELS device)
  # The sweep's cluster cap: the bench takes 1, 2, 4 or 8 (the mma rows still check out against
  # the reference with every tile on one CTA) and names anything else (CLI11's validation exit).
  add_test(NAME ops_bench_host_mma_cluster_cap_1
           COMMAND ${CMAKE_COMMAND} "-DCOMMAND=$<TARGET_FILE:metrale-ops-bench>|--host|--sanity|--mma-max-cluster|1"
                   -DEXPECTED=0 "-DMATCH=ssm_ba_gates +mma +300 +1024 .* ok" -P
                   ${PROJECT_SOURCE_DIR}/tests/scripts/expect_exit.cmake)
  add_test(NAME ops_bench_mma_cluster_cap_3_refused
           COMMAND ${CMAKE_COMMAND} "-DCOMMAND=$<TARGET_FILE:metrale-ops-bench>|--mma-max-cluster|3" -DEXPECTED=105
                   "-DMATCH=--mma-max-cluster: 3 not in" -P ${PROJECT_SOURCE_DIR}/tests/scripts/expect_exit.cmake)
  set_tests_properties(ops_bench_host_mma_cluster_cap_1 ops_bench_mma_cluster_cap_3_refused
                       PROPERTIES TIMEOUT 120 LABELS device ENVIRONMENT "METRALE_CACHE_DIR=${PROJECT_BINARY_DIR}/test-cache")
endif()
# The next device run's mma variants (tools/bench/mma_variants.txt) parse, name entries the hopper
# target has, and pass the kernel catalog's rules, so no device time goes to a refused variant.
if(TARGET metrale-jit)
  add_test(NAME mma_sweep_plan
           COMMAND python3 ${PROJECT_SOURCE_DIR}/tools/bench/variant_sweep.py --hardware
                   ${PROJECT_SOURCE_DIR}/hardware --variants-file ${PROJECT_SOURCE_DIR}/tools/bench/mma_variants.txt
                   --plan --cli $<TARGET_FILE:metrale-jit>)
  set_tests_properties(mma_sweep_plan PROPERTIES TIMEOUT 120 LABELS device)
  add_test(NAME mma_sweep_bad_cluster_cap
           COMMAND ${CMAKE_COMMAND}
                   "-DCOMMAND=python3|${PROJECT_SOURCE_DIR}/tools/bench/variant_sweep.py|--hardware|${PROJECT_SOURCE_DIR}/hardware|--variant|x%3|--plan"
                   -DEXPECTED=1 "-DMATCH=bad cluster cap '%3'" -P ${PROJECT_SOURCE_DIR}/tests/scripts/expect_exit.cmake)
  set_tests_properties(mma_sweep_bad_cluster_cap PROPERTIES TIMEOUT 60 LABELS device)
endif()
# The GPU tests run from staged binaries on a machine without the build's source folder: none of
# them (nor a tests/ header they include) may read the build's paths, only test_source_dir().
add_test(NAME gpu_tests_read_no_source_path
         COMMAND python3 ${PROJECT_SOURCE_DIR}/tests/scripts/gpu_tests_read_no_source_path.py ${PROJECT_SOURCE_DIR}/tests)
set_tests_properties(gpu_tests_read_no_source_path PROPERTIES TIMEOUT 60 LABELS device)
# A kernel verification refuses keeps its bench rows, printed as refused with the reason, whether
# verified at the open or in a child process (the device default: a faulting check cannot lose
# the bench's context).
if(TARGET metrale-ops-bench)
  foreach(mode isolated inline)
    add_test(NAME ops_bench_refused_kernel_rows_${mode}
             COMMAND bash ${PROJECT_SOURCE_DIR}/tests/device_check/bench_refused_test.sh
                     $<TARGET_FILE:metrale-ops-bench> ${mode})
    set_tests_properties(ops_bench_refused_kernel_rows_${mode} PROPERTIES TIMEOUT 600 LABELS device)
  endforeach()
endif()
