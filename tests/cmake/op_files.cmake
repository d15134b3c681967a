# CTest tests of an engine's op declared in a TOML op file (`--op-file`, src/ops/op_spec_toml.hpp):
# tests/data/ops/fp8_as_data.toml (fp8_act_quant re-declared as data) explained, self-tested and
# verified by the CLI as the library's ops are, on the host backend; the same file with one planted
# mistake (written here at configure time, not kept as a second copy) fails its twin's checks,
# and a malformed one is refused naming its file, line and key.
if(NOT TARGET metrale-jit)
  return()
endif()
set(METRALE_OP_FILE ${PROJECT_SOURCE_DIR}/tests/data/ops/fp8_as_data.toml)
set(METRALE_OP_FILES_WORK ${PROJECT_BINARY_DIR}/cli-work/op-files)
file(READ ${METRALE_OP_FILE} METRALE_OP_FILE_TEXT)
# Planted: the twin's grid rounds K's groups down, dropping a row's last partial CTA.
string(REPLACE "\"ceil_div(k / 128, max(twin.groups, 1))\", 1]" "\"k / 128 / max(twin.groups, 1)\", 1]"
               METRALE_OP_FILE_FLOOR "${METRALE_OP_FILE_TEXT}")
file(WRITE ${METRALE_OP_FILES_WORK}/fp8_floor_grid.toml "${METRALE_OP_FILE_FLOOR}")
# Planted: a guard condition naming something no slot holds.
string(REPLACE "holds = \"twin.present\"" "holds = \"twin.present && ctas > 0\"" METRALE_OP_FILE_UNKNOWN
               "${METRALE_OP_FILE_TEXT}")
file(WRITE ${METRALE_OP_FILES_WORK}/fp8_unknown_name.toml "${METRALE_OP_FILE_UNKNOWN}")
set(METRALE_OP_FILES_ENV "METRALE_CACHE_DIR=${METRALE_OP_FILES_WORK}/cache")

metrale_cli_test(op_file_explain_min_m 0 "fp8_act_quant_toml runs fp8_act_quant_hopper for M >= 53" ARGS explain
                 fp8_act_quant_toml --target hopper --k 5120 --op-file ${METRALE_OP_FILE})
metrale_cli_test(op_file_explain_below_floor 0 "runs +fp8_act_quant[^_].*reason too few CTAs to fill the device"
                 ARGS explain fp8_act_quant_toml --target hopper --k 5120 --m 52 --op-file ${METRALE_OP_FILE})
metrale_cli_test(op_file_explain_refuses_as_run 1 "fp8_act_quant_toml: K is not a multiple of the group size 128"
                 ARGS explain fp8_act_quant_toml --target hopper --k 100 --m 4 --op-file ${METRALE_OP_FILE})
metrale_cli_test(op_file_selftest 0 "fp8_act_quant_toml +twin +fp8_act_quant_hopper .*bytes == parent +PASS.*2 checks, 0 failed"
                 ARGS selftest --target hopper --op fp8_act_quant_toml --op-file ${METRALE_OP_FILE}
                 ENV ${METRALE_OP_FILES_ENV})
metrale_cli_test(op_file_selftest_planted_grid_fails 1 "FAIL .*differ; first q.0..1024.*2 checks, 2 failed" ARGS
                 selftest --target hopper --op fp8_act_quant_toml --op-file ${METRALE_OP_FILES_WORK}/fp8_floor_grid.toml
                 ENV ${METRALE_OP_FILES_ENV})
metrale_cli_test(op_file_unknown_name_names_line_and_key 1
                 "fp8_unknown_name.toml:[0-9]+: roles.1..guard.0..holds: .*unknown name 'ctas'" ARGS explain
                 fp8_act_quant_toml --target hopper --k 5120 --op-file ${METRALE_OP_FILES_WORK}/fp8_unknown_name.toml)
metrale_cli_test(op_file_missing_exits_1 1 "/nonexistent/op.toml: cannot be read" ARGS explain fp8_act_quant_toml
                 --target hopper --k 5120 --op-file /nonexistent/op.toml)
# An op file's op is priced by the profile from its declaration alone (src/ops/op_spec_profile.cpp).
metrale_cli_test(op_file_profile 0 "fp8_act_quant_toml on hopper at M=16 K=1024: floor .*fp8_act_quant_hopper"
                 ARGS profile fp8_act_quant_toml --target hopper --m 16 --k 1024 --op-file ${METRALE_OP_FILE}
                 ENV ${METRALE_OP_FILES_ENV})
