# CTest tests that run the metrale-jit binary itself: exit codes and output contracts.
# metrale_cli_test(NAME EXPECTED_EXIT MATCH_REGEX ARGS... [ENV K=V|...]) runs the CLI through
# tests/scripts/expect_exit.cmake.
if(NOT TARGET metrale-jit)
  return()
endif()
function(metrale_cli_test name expected match)
  cmake_parse_arguments(PARSE_ARGV 3 arg "" "ENV" "ARGS")
  string(REPLACE ";" "|" joined "$<TARGET_FILE:metrale-jit>;${arg_ARGS}")
  add_test(NAME cli_${name}
           COMMAND ${CMAKE_COMMAND} "-DCOMMAND=${joined}" -DEXPECTED=${expected} "-DMATCH=${match}" "-DENV=${arg_ENV}"
                   -P ${PROJECT_SOURCE_DIR}/tests/scripts/expect_exit.cmake)
endfunction()

metrale_cli_test(targets_lists_every_target 0 "hopper.*9\\.0.*sm_90.*132" ARGS targets)
metrale_cli_test(targets_json 0 "\"fp8_act_quant_hopper\"" ARGS targets --json)
metrale_cli_test(bad_usage_exits_2 2 "no-such-flag" ARGS targets --no-such-flag)
metrale_cli_test(no_command_exits_2 2 "" ARGS)
metrale_cli_test(bad_hardware_dir_exits_1 1 "METRALE_HARDWARE_DIR" ARGS targets ENV METRALE_HARDWARE_DIR=/nonexistent/metrale)
# The remote tier's state (cache remote): not configured, unreachable (loopback port 1: nothing
# listens), a malformed METRALE_REMOTE_CACHE named with its value.
metrale_cli_test(cache_remote_not_configured 0 "remote cache: not configured" ARGS cache remote ENV METRALE_REMOTE_CACHE=)
metrale_cli_test(cache_remote_unreachable 1 "redis://127.0.0.1:1/0: unreachable: cannot connect" ARGS cache remote --url
                 redis://127.0.0.1:1)
metrale_cli_test(cache_remote_malformed 1 "METRALE_REMOTE_CACHE='redis://x' is not a Redis URL" ARGS cache remote ENV
                 METRALE_REMOTE_CACHE=redis://x)

metrale_cli_test(explain_fp8_min_m_hopper_5120 0 "M >= 53" ARGS explain fp8-quant --target hopper --k 5120)
metrale_cli_test(explain_ba_min_m_hopper 0 "M >= 264" ARGS explain ba-gates --target hopper --n 96 --k 5120)
metrale_cli_test(explain_ba_min_m_tensor_core_hopper 0 "ssm_ba_gates_mma for M >= 256" ARGS explain ba-gates --target
                 hopper --n 96 --k 5120)
metrale_cli_test(explain_ba_prefill_picks_mma 0 "runs   ssm_ba_gates_mma" ARGS explain ba-gates --target hopper --m 8192
                 --n 96 --k 5120)
metrale_cli_test(explain_ba_prefill_mma_clusters_of_2 0 "tiles of 128 tokens, each tile's K split over 2 CTAs" ARGS
                 explain ba-gates --target hopper --m 8192 --n 96 --k 5120)
metrale_cli_test(explain_ba_prefill_tensor_core_off_picks_twin 0 "runs   ssm_ba_gates_hopper .the twin." ARGS
                 explain ba-gates --target hopper --m 8192 --n 96 --k 5120 ENV METRALE_SSM_BA_GATES_TENSOR_CORE=0)
# The shape constant: hopper pins N = 96, so a call at N 96 takes the 6-tile variant built at open;
# N 130 stays generic with the rule's reason.
metrale_cli_test(explain_ba_shape_pinned 0 "shape  n = 96: ssm_ba_gates_mma b256l128g6s6, pinned: built at open" ARGS
                 explain ba-gates --target hopper --m 8192 --n 96 --k 5120)
metrale_cli_test(explain_ba_shape_refused 0 "shape  n = 130: ssm_ba_gates_mma b256l128g6 .generic.: N > 128" ARGS
                 explain ba-gates --target hopper --m 8192 --n 130 --k 5120 --nv 65 --vheads-per-group 5)
# explain --json: the tensor-core role is an object named after it, its details its keys.
metrale_cli_test(explain_ba_json_tensor_core_details 0
                 "\"tensor_core\": {.*\"cluster_blocks\": 2,.*\"runs\": true,.*\"tokens_per_tile\": 128" ARGS
                 explain ba-gates --target hopper --m 8192 --n 96 --k 5120 --json)
# The third op: 17408 / 128 = 136 groups, 17 CTAs of 8 groups per token; 2 x 132 SMs = 264 CTAs need M >= 16.
metrale_cli_test(explain_silu_mul_min_m_hopper 0 "silu_mul_fp8_quant_fused.*M >= 16" ARGS explain silu_mul_fp8_quant
                 --target hopper --k 17408)
metrale_cli_test(explain_unknown_target_exits_1 1 "no such target" ARGS explain ba-gates --target nope --n 96 --k 5120)
metrale_cli_test(explain_bad_lever_exits_2 2 "lever" ARGS explain fp8-quant --target hopper --k 5120 --lever maybe)

# explain agrees with the guard functions over a grid of inputs.
add_executable(metrale_explain_agreement ${PROJECT_SOURCE_DIR}/tests/cli/explain_agreement.cpp)
target_link_libraries(metrale_explain_agreement PRIVATE metrale::jit metrale_warnings)
add_test(NAME cli_explain_agrees_with_guards COMMAND metrale_explain_agreement $<TARGET_FILE:metrale-jit>)

# tune on the host backend (no device here): the table goes to stdout with its provenance and one
# row per guarded role at each K; an unknown op is bad usage. The table's reading and the guards'
# use of it are tests/unit/runtime_tuning_test.cpp's.
metrale_cli_test(tune_writes_a_table 0
                 "backend = \"host\".*op = \"fp8_act_quant\".*role = \"twin\".*k = 1024.*timings" ARGS tune --op
                 fp8-quant --m 1,2 --k 1024 --repeats 1 ENV METRALE_VERIFY=off)
metrale_cli_test(tune_unknown_op_exits_2 2 "unknown op 'nope'" ARGS tune --op nope ENV METRALE_VERIFY=off)
add_test(NAME cli_tune_then_explain_names_the_row
         COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:metrale-jit> -DWORK=${CMAKE_CURRENT_BINARY_DIR}/tune-then-explain
                 -P ${PROJECT_SOURCE_DIR}/tests/scripts/tune_then_explain.cmake)
