# CTest tests of the build, run and selftest commands (cli.cmake, included before this file,
# defines metrale_cli_test). Every test points METRALE_CACHE_DIR into the build tree, so
# nothing touches ~/.cache; each checker wipes its own work folder first.
if(NOT TARGET metrale-jit)
  return()
endif()
set(METRALE_CLI_WORK ${PROJECT_BINARY_DIR}/cli-work)
set(METRALE_CLI_CACHE "METRALE_CACHE_DIR=${METRALE_CLI_WORK}/cache")

foreach(checker build_outputs run_roundtrip)
  add_executable(metrale_cli_${checker} ${PROJECT_SOURCE_DIR}/tests/cli/${checker}.cpp)
  target_link_libraries(metrale_cli_${checker} PRIVATE metrale::jit metrale_warnings)
endforeach()

foreach(mode files spills cache-verify)
  add_test(NAME cli_build_${mode}
           COMMAND metrale_cli_build_outputs $<TARGET_FILE:metrale-jit> ${METRALE_CLI_WORK}/build-${mode} ${mode})
endforeach()
add_test(NAME cli_build_broken_template
         COMMAND metrale_cli_build_outputs $<TARGET_FILE:metrale-jit> ${METRALE_CLI_WORK}/build-broken broken-template)
add_test(NAME cli_run_roundtrip COMMAND metrale_cli_run_roundtrip $<TARGET_FILE:metrale-jit> ${METRALE_CLI_WORK}/run)

metrale_cli_test(selftest_passes 0 "0 failed" ARGS selftest ENV ${METRALE_CLI_CACHE})
# The third op's check hook at the full shapes (Qwen3.5-27B's K 17408 at the twin's M >= 16 boundary on
# hopper's 132 SMs, and M 15): parent h within 1 ulp of the reference and its bytes the FP8 reference of that h,
# twin == parent, all six rows PASS (none skipped).
metrale_cli_test(selftest_silu_mul 0
                 "parent +silu_mul_bf16 +M=16 K=17408 gate.up halves of .M..2K. +h within 1 ulp, bytes == FP8-ref.h. +PASS.*twin +silu_mul_fp8_quant_fused +M=16 K=17408.*PASS.*PASS.*PASS.*PASS.*PASS.*6 checks, 0 failed"
                 ARGS selftest --target hopper --op silu_mul_fp8_quant ENV ${METRALE_CLI_CACHE})
# The fourth op's check hook at the full shapes (Qwen3.5-27B's hidden 5120, in place with the FP8 output at M 16, and
# apart at M 7): the parent's residual_out and y the reference's, twin == parent, all four rows PASS.
metrale_cli_test(selftest_fused_add_rmsnorm 0
                 "parent +fused_add_rmsnorm +M=16 hidden=5120 in place .fp8 +residual_out ==, y within 1 ulp, bytes == FP8-ref.y. +PASS.*twin +fused_add_rmsnorm_vec +M=16.*PASS.*PASS.*PASS.*4 checks, 0 failed"
                 ARGS selftest --target hopper --op fused_add_rmsnorm ENV ${METRALE_CLI_CACHE})
# verify: every kernel's verdict on this device (here the host backend); the table, then the JSON's
# exact keys (tests/scripts/verify_json.cmake).
metrale_cli_test(verify_table 0 "fp8_act_quant_hopper +l4g8 +bytes == parent x3 +passed .* kernels, 0 failed" ARGS verify
                 --target hopper ENV ${METRALE_CLI_CACHE})
add_test(NAME cli_verify_json COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:metrale-jit> -DKERNEL=fp8_act_quant_hopper -P
                                      ${PROJECT_SOURCE_DIR}/tests/scripts/verify_json.cmake)
set_tests_properties(cli_verify_json PROPERTIES ENVIRONMENT "${METRALE_CLI_CACHE}")
metrale_cli_test(build_hopper_table 0 "ssm_ba_gates_hopper.*sm_90" ARGS build --target hopper ENV ${METRALE_CLI_CACHE})
# hopper pins N = 96: build compiles its 6-tile variant beside the generic tensor-core form (10
# kernels); --pinned-only leaves the generic to first sight, as Runtime::open with background
# variants does (10).
metrale_cli_test(build_hopper_pinned_only 0
                 "note: hopper: ssm_ba_gates_mma b256l128g6 left to a call's first sight.*ssm_ba_gates_mma +b256l128g6s6 .*10 kernels, 0 failed"
                 ARGS build --target hopper --pinned-only ENV ${METRALE_CLI_CACHE})
metrale_cli_test(build_hopper_with_generic 0
                 "ssm_ba_gates_mma +b256l128g6 +sm_90.*ssm_ba_gates_mma +b256l128g6s6 .*11 kernels, 0 failed"
                 ARGS build --target hopper ENV ${METRALE_CLI_CACHE})
# The start-up bench's first-op process (tools/bench/first_op.cpp) opens and finds the parents.
if(TARGET metrale-first-op)
  add_test(NAME first_op_bench_opens
           COMMAND ${CMAKE_COMMAND} -DCOMMAND=$<TARGET_FILE:metrale-first-op> -DEXPECTED=0
                   "-DMATCH=ssm_ba_gates: ssm_ba_gates loaded.*fp8_act_quant: fp8_act_quant loaded.*open_ms"
                   -P ${PROJECT_SOURCE_DIR}/tests/scripts/expect_exit.cmake)
  set_tests_properties(first_op_bench_opens PROPERTIES TIMEOUT 300 ENVIRONMENT "${METRALE_CLI_CACHE}")
endif()

# Bad usage: exit 2 with a message that names the problem.
metrale_cli_test(build_target_and_all_exits_2 2 "exclude each other" ARGS build --target hopper --all-targets
                 ENV ${METRALE_CLI_CACHE})
metrale_cli_test(build_unknown_target_exits_2 2 "no such target" ARGS build --target nope ENV ${METRALE_CLI_CACHE})
metrale_cli_test(selftest_unknown_target_exits_2 2 "no such target" ARGS selftest --target nope
                 ENV ${METRALE_CLI_CACHE})
metrale_cli_test(run_missing_vheads_exits_2 2 "vheads-per-group" ARGS run ba-gates --in ${PROJECT_SOURCE_DIR}
                 --out ${METRALE_CLI_WORK}/unused ENV ${METRALE_CLI_CACHE})
metrale_cli_test(run_missing_in_dir_exits_2 2 "--in" ARGS run fp8-quant --in /nonexistent/metrale --out
                 ${METRALE_CLI_WORK}/unused ENV ${METRALE_CLI_CACHE})
# "parent" is the FP8 op's role (its shared kernel) since roles are declared; a role it lacks is bad usage.
metrale_cli_test(run_fp8_mma_kernel_exits_2 2 "--kernel mma: fp8_act_quant has no kernel role 'mma'" ARGS run fp8-quant
                 --in ${PROJECT_SOURCE_DIR} --out ${METRALE_CLI_WORK}/unused --kernel mma ENV ${METRALE_CLI_CACHE})
metrale_cli_test(run_no_op_exits_2 2 "" ARGS run ENV ${METRALE_CLI_CACHE})
