# CTest tests that run the metrale-jit binary itself: exit codes and output contracts.
if(TARGET metrale-jit)
  add_test(NAME cli_targets_lists_every_target COMMAND metrale-jit targets)
  set_tests_properties(cli_targets_lists_every_target PROPERTIES
    PASS_REGULAR_EXPRESSION "hopper.*9\\.0.*sm_90.*132")
  add_test(NAME cli_targets_json COMMAND metrale-jit targets --json)
  set_tests_properties(cli_targets_json PROPERTIES PASS_REGULAR_EXPRESSION "\"fp8_act_quant_hopper\"")
  add_test(NAME cli_bad_usage_exits_2 COMMAND metrale-jit targets --no-such-flag)
  set_tests_properties(cli_bad_usage_exits_2 PROPERTIES WILL_FAIL TRUE)
  add_test(NAME cli_bad_hardware_dir_exits_1 COMMAND ${CMAKE_COMMAND} -E env METRALE_HARDWARE_DIR=/nonexistent/metrale
                                                     $<TARGET_FILE:metrale-jit> targets)
  set_tests_properties(cli_bad_hardware_dir_exits_1 PROPERTIES WILL_FAIL TRUE)
endif()
