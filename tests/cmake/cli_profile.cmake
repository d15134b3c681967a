# CTest tests of `metrale-jit profile` (cli.cmake, included before this file, defines
# metrale_cli_test). Small shapes: each runs in about a second.
if(NOT TARGET metrale-jit)
  return()
endif()
set(METRALE_PROFILE_CACHE "METRALE_CACHE_DIR=${PROJECT_BINARY_DIR}/cli-work/cache")
metrale_cli_test(profile_fp8_json 0 "\"dram_bytes\".*\"predicted_us\".*\"total_blocks\"" ARGS profile fp8-quant
                 --target hopper --m 16 --k 5120 --json ENV ${METRALE_PROFILE_CACHE})
metrale_cli_test(profile_ba_table 0 "ssm_ba_gates_hopper .*launch.*16/16" ARGS profile ba-gates --target hopper --m 16 --n 96
                 --k 1024 ENV ${METRALE_PROFILE_CACHE})
# The third op's three launches in order; its floor is gate and up read, q and scales written once:
# M 16, K 1024: 16 x 1024 x 2 x 2 + 16 x 1024 + 16 x 8 x 4 = 82432 bytes.
metrale_cli_test(profile_silu_mul_json 0
                 "\"kernel\": \"silu_mul_bf16\".*\"role\": \"parent\".*\"compulsory_bytes\": 82432.*\"kernel\": \"fp8_act_quant\".*\"role\": \"quant\".*\"kernel\": \"silu_mul_fp8_quant_fused\".*\"role\": \"twin\""
                 ARGS profile silu_mul_fp8_quant --target hopper --m 16 --k 1024 --json ENV ${METRALE_PROFILE_CACHE})
# The fourth op by its declared name: parent then twin, at its floor (x, residual, weight, y, residual_out, q, scales).
metrale_cli_test(profile_fused_add_rmsnorm_json 0
                 "\"kernel\": \"fused_add_rmsnorm\".*\"role\": \"parent\".*\"compulsory_bytes\": 150016.*\"kernel\": \"fused_add_rmsnorm_vec\".*\"role\": \"twin\""
                 ARGS profile fused_add_rmsnorm --target hopper --m 16 --k 1024 --json ENV ${METRALE_PROFILE_CACHE})
metrale_cli_test(profile_unknown_op_exits_2 2 "unknown op" ARGS profile gemm --m 16 ENV ${METRALE_PROFILE_CACHE})
metrale_cli_test(profile_fp8_parent_exits_2 2 "not a kernel of fp8-quant" ARGS profile fp8-quant --m 16 --kernel
                 parent ENV ${METRALE_PROFILE_CACHE})
metrale_cli_test(profile_bad_k_exits_2 2 "128" ARGS profile fp8-quant --m 16 --k 100 ENV ${METRALE_PROFILE_CACHE})
# --variant: a variant the target does not ship, compiled by the host JIT as a profiled object
# (about a second with g++, once per cache folder); bad specs exit 2 naming the kernel and key.
metrale_cli_test(profile_variant_table 0 "ssm_ba_gates_mma +b256l128g4 +\\(8,1,1\\) +8 " ARGS profile ba-gates --m 16 --k 1024
                 --kernel mma --variant ssm_ba_gates_mma:lanes=128,groups=4 ENV ${METRALE_PROFILE_CACHE})
metrale_cli_test(profile_variant_bad_lanes_exits_2 2 "kernels.ssm_ba_gates_mma.lanes: lanes = 100" ARGS profile ba-gates
                 --m 16 --variant ssm_ba_gates_mma:block=256,lanes=100,groups=6 ENV ${METRALE_PROFILE_CACHE})
metrale_cli_test(profile_variant_unknown_key_exits_2 2 "unknown key 'warps'" ARGS profile ba-gates --m 16 --variant
                 ssm_ba_gates_mma:warps=4 ENV ${METRALE_PROFILE_CACHE})
metrale_cli_test(profile_variant_other_op_exits_2 2 "ssm_ba_gates_mma' is not a kernel of fp8-quant" ARGS profile
                 fp8-quant --m 16 --variant ssm_ba_gates_mma:groups=4 ENV ${METRALE_PROFILE_CACHE})
metrale_cli_test(profile_variant_twice_exits_2 2 "one per kernel" ARGS profile ba-gates --m 16 --variant
                 ssm_ba_gates_mma:groups=4 --variant ssm_ba_gates_mma:groups=6 ENV ${METRALE_PROFILE_CACHE})
# Shape constants (issue 26): at N = 96 the tensor-core kernel is priced generic, then specialised
# on its 6 output tiles; at N = 144 its rule refuses, and a note says why (the generic kernel itself
# takes no N past 128, so the twin alone is priced there).
metrale_cli_test(profile_ba_specialised_table 0
                 "ssm_ba_gates_mma +b256l128g6 .* generic.*ssm_ba_gates_mma +b256l128g6s6 .* specialised \\(n = 96\\)"
                 ARGS profile ba-gates --m 16 --n 96 --k 1024 --kernel mma ENV ${METRALE_PROFILE_CACHE})
metrale_cli_test(profile_ba_specialised_json 0
                 "\"params\": \"b256l128g6\",.*\"variant\": \"generic\".*\"params\": \"b256l128g6s6\",.*\"shape\": 6,.*\"variant\": \"specialised\""
                 ARGS profile ba-gates --m 16 --n 96 --k 1024 --kernel mma --json ENV ${METRALE_PROFILE_CACHE})
metrale_cli_test(profile_ba_shape_refused_note 0
                 "note: ssm_ba_gates_mma at n = 144 stays generic .no specialised row.: N > 128" ARGS profile ba-gates
                 --m 16 --n 144 --k 1024 --kernel twin ENV ${METRALE_PROFILE_CACHE})
# A specialised variant the host JIT cannot build (N = 80: no built-in; CXX names no compiler) is a
# note; the generic row is still priced (stdout, the table, is matched before stderr).
metrale_cli_test(profile_ba_specialised_unbuilt_note 0
                 "ssm_ba_gates_mma +b256l128g6 .* generic.*note: ssm_ba_gates_mma b256l128g6s5 .specialised on n = 80. not priced: "
                 ARGS profile ba-gates --m 16 --n 80 --k 1024 --kernel mma
                 ENV "${METRALE_PROFILE_CACHE}|CXX=/nonexistent/metrale-test/g++")
