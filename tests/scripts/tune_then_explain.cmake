# tune_then_explain.cmake: `metrale-jit tune` writes a table (host backend, FP8 at K 1024) to a
# fresh folder, then `explain --tuning-table` reads it: the twin's threshold is named as that file's
# row 1, measured on the host backend, beside the prediction; an edited copy is refused (exit 1).
# cmake -DCLI=path/to/metrale-jit -DWORK=folder -P tune_then_explain.cmake
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(ENV{METRALE_VERIFY} off)
execute_process(COMMAND "${CLI}" tune --op fp8-quant --m 1,2 --k 1024 --repeats 1 --out "${WORK}/t.toml"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT err MATCHES "wrote .*t.toml \\(1 row\\)")
  message(FATAL_ERROR "tune: exit ${rc}\n${out}\n${err}")
endif()
execute_process(COMMAND "${CLI}" explain fp8-quant --target hopper --k 1024 --tuning-table "${WORK}/t.toml"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "threshold: tuning table [^ ]*t.toml, row 1 \\(host backend, [0-9T:Z-]+; predicted M >= 264\\)")
  message(FATAL_ERROR "explain: exit ${rc}\n${out}\n${err}")
endif()
file(READ "${WORK}/t.toml" table)
string(REGEX REPLACE "sm_count = 132" "sm_count = 133" edited "${table}")
file(WRITE "${WORK}/edited.toml" "${edited}")
execute_process(COMMAND "${CLI}" explain fp8-quant --target hopper --k 1024 --tuning-table "${WORK}/edited.toml"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 1 OR NOT "${out}${err}" MATCHES "edited")
  message(FATAL_ERROR "explain of an edited table: exit ${rc}\n${out}\n${err}")
endif()
file(REMOVE_RECURSE "${WORK}")
