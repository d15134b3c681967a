/* capi_host_ops.c: a C99 engine's view of metrale.h (nothing else of the library): opens a
 * runtime on the host backend, runs both seed ops by name (metrale_op_run, named arguments)
 * against small references computed here, forces kernels by role name and alias, checks that
 * every refusal (unknown op, argument or role, a missing argument, a scalar out of range, a bad
 * shape, a NULL runtime) is named and writes nothing, and gets the named reason of a variant
 * that fails to compile; ABI 3's verification switch (options.verify) reaches runtime_info.verify,
 * a bad value is refused by name and an ABI 2 sized struct still opens; ABI 5's options.remote_cache
 * (a malformed URL refused by name, an unreachable one harmless). Exit 0 when every check holds; each failed
 * check prints what differed. */
#define _POSIX_C_SOURCE 200112L

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capi_check.h"
#include "metrale/metrale.h"

static const uint32_t kPoison = 0x7fc00bad; /* a NaN no kernel writes */

/* ---- README: C example ---- */
static int run_ba_gates_example(const uint16_t* x, const uint16_t* w, const float* a_log, const float* dt_bias,
                                float* gate_out, uint32_t m) {
  metrale_runtime_options options;
  metrale_runtime_options_init(&options);
  options.backend = METRALE_BACKEND_HOST; /* the CPU; METRALE_BACKEND_AUTO takes the GPU */
  metrale_runtime* rt = NULL;
  if (metrale_runtime_open(&options, &rt) != METRALE_OK) {
    fprintf(stderr, "open: %s\n", metrale_last_error());
    return 1;
  }
  /* Arguments by the names the op declares (metrale_op_arg_get lists them); addresses are
     device addresses, host ones on the host backend. */
  const metrale_op_arg args[] = {
      {"x", (uint64_t)(uintptr_t)x},
      {"weight", (uint64_t)(uintptr_t)w},
      {"a_log", (uint64_t)(uintptr_t)a_log},
      {"dt_bias", (uint64_t)(uintptr_t)dt_bias},
      {"gate_out", (uint64_t)(uintptr_t)gate_out},
      {"m", m},
      {"n", 8},
      {"k", 256},
      {"vheads_per_group", 2},
  };
  metrale_op_pick pick;
  metrale_op_pick_init(&pick);
  const metrale_status status =
      metrale_op_run(rt, "ssm_ba_gates", args, sizeof args / sizeof args[0], 0 /* stream */, &pick);
  if (status == METRALE_OK) {
    printf("ran %s (role %s)\n", pick.kernel, pick.role);
    for (uint32_t i = 0; i < pick.verdict_count; ++i) {
      printf("  %s: %s\n", pick.verdicts[i].role, pick.verdicts[i].reason ? pick.verdicts[i].reason : "taken");
    }
  } else {
    fprintf(stderr, "ssm_ba_gates: %s\n", metrale_last_error());
  }
  metrale_runtime_close(rt);
  return status == METRALE_OK ? 0 : 1;
}
/* ---- README: end ---- */

enum { M = 5, N = 8, K = 256, NV = 4, VPG = 2, FP8_M = 3, FP8_K = 256, FP8_STRIDE = 264 };
enum { GATES = M * 2 * NV };

static void poison(float* out, int count) {
  for (int i = 0; i < count; ++i) memcpy(&out[i], &kPoison, 4);
}
static int untouched(const float* out, int count) {
  for (int i = 0; i < count; ++i) {
    if (memcmp(&out[i], &kPoison, 4) != 0) return 0;
  }
  return 1;
}

/* A refused call: the status, a message holding `part`, and the pick left as it was. */
#define CHECK_REFUSED(call, want_status, part, pick)                                                                \
  do {                                                                                                              \
    (pick).verdict_count = 77;                                                                                      \
    const metrale_status got_ = (call);                                                                             \
    CHECK(got_ == (want_status), "%s: status %s: %s", #call, metrale_status_name(got_), metrale_last_error());      \
    CHECK(contains(metrale_last_error(), part), "%s: message '%s' does not name '%s'", #call, metrale_last_error(), \
          part);                                                                                                    \
    CHECK((pick).verdict_count == 77, "%s: the pick was written on a refusal", #call);                              \
  } while (0)

static void check_ba_gates(metrale_runtime* rt) {
  uint16_t* x = aligned(sizeof(uint16_t) * M * K);
  uint16_t* w = aligned(sizeof(uint16_t) * N * K);
  float* a_log = aligned(sizeof(float) * NV);
  float* dt_bias = aligned(sizeof(float) * NV);
  float* out = aligned(sizeof(float) * GATES);
  float* forced = aligned(sizeof(float) * GATES);
  for (int i = 0; i < M * K; ++i) x[i] = bf16_bits(uniform(-1.0f, 1.0f));
  for (int i = 0; i < N * K; ++i) w[i] = bf16_bits(uniform(-0.2f, 0.2f));
  for (int i = 0; i < NV; ++i) a_log[i] = uniform(-1.0f, 1.0f), dt_bias[i] = uniform(-1.0f, 1.0f);
  poison(out, GATES);

  CHECK(run_ba_gates_example(x, w, a_log, dt_bias, out, M) == 0, "the README example failed");
  for (int t = 0; t < M; ++t) {
    for (int n = 0; n < N; ++n) {
      double acc = 0.0;
      for (int i = 0; i < K; ++i) acc += (double)bf16_value(x[t * K + i]) * (double)bf16_value(w[n * K + i]);
      const int group = n / (2 * VPG), within = n % (2 * VPG), beta = within < VPG;
      const int vh = group * VPG + (beta ? within : within - VPG);
      const double sp = acc + dt_bias[vh] > 20.0 ? acc + dt_bias[vh] : log1p(exp(acc + dt_bias[vh]));
      const double want = beta ? 1.0 / (1.0 + exp(-acc)) : -exp((double)a_log[vh]) * sp;
      const double got = out[t * 2 * NV + (beta ? NV + vh : vh)];
      CHECK(fabs(got - want) <= 1e-4 * (1.0 + fabs(want)), "gate_out[%d][n=%d] = %g, reference %g", t, n, got, want);
    }
  }
  /* Every argument spelled out, through the op's alias; gate_out is `forced` (args[4]). */
  metrale_op_arg args[] = {{"x", PTR(x)},
                           {"weight", PTR(w)},
                           {"a_log", PTR(a_log)},
                           {"dt_bias", PTR(dt_bias)},
                           {"gate_out", PTR(forced)},
                           {"m", M},
                           {"n", N},
                           {"k", K},
                           {"k_stride", K},
                           {"gate_stride", 2 * NV},
                           {"nv", NV},
                           {"vheads_per_group", VPG}};
  metrale_op_pick pick;
  metrale_op_pick_init(&pick);

  /* The guards' pick at M = 5: the three fast kernels refused, the tensor-core guard first, then
     the decode kernel's (K too short to split), then the twin's. */
  poison(forced, GATES);
  CHECK(metrale_op_run(rt, "ba-gates", args, COUNT(args), 0, &pick) == METRALE_OK, "%s", metrale_last_error());
  CHECK(strcmp(pick.op, "ssm_ba_gates") == 0 && strcmp(pick.role, "parent") == 0 &&
            strcmp(pick.kernel, "ssm_ba_gates") == 0 && pick.forced == 0,
        "guarded pick: op %s role %s kernel %s forced %d", pick.op, pick.role, pick.kernel, pick.forced);
  CHECK(pick.verdict_count == 3, "%u verdicts", pick.verdict_count);
  CHECK(strcmp(pick.verdicts[0].role, "tensor_core") == 0 && contains(pick.verdicts[0].reason, "a twelfth of the SMs"),
        "verdict 0: %s: %s", pick.verdicts[0].role, TEXT(pick.verdicts[0].reason));
  CHECK(strcmp(pick.verdicts[1].role, "decode") == 0 && contains(pick.verdicts[1].reason, "no K split fits"),
        "verdict 1: %s: %s", pick.verdicts[1].role, TEXT(pick.verdicts[1].reason));
  CHECK(strcmp(pick.verdicts[2].role, "twin") == 0 && contains(pick.verdicts[2].reason, "one CTA per token"),
        "verdict 2: %s: %s", pick.verdicts[2].role, TEXT(pick.verdicts[2].reason));
  CHECK(memcmp(out, forced, sizeof(float) * GATES) == 0, "the guarded run's bytes differ from the README run's");

  /* Forced by role name: the twin computes the parent's bytes. */
  poison(forced, GATES);
  CHECK(metrale_op_run_role(rt, "ssm_ba_gates", "twin", args, COUNT(args), 0, &pick) == METRALE_OK, "%s",
        metrale_last_error());
  CHECK(strcmp(pick.role, "twin") == 0 && strcmp(pick.kernel, "ssm_ba_gates_hopper") == 0 && pick.forced == 1 &&
            pick.verdict_count == 1 && strcmp(pick.verdicts[0].role, "twin") == 0 && pick.verdicts[0].reason == NULL,
        "forced twin: role %s kernel %s forced %d, %u verdicts", pick.role, pick.kernel, pick.forced,
        pick.verdict_count);
  CHECK(memcmp(out, forced, sizeof(float) * GATES) == 0, "the twin's bytes differ from the parent's");

  /* Forced parent: the pick says the caller forced it. */
  poison(forced, GATES);
  CHECK(metrale_op_run_role(rt, "ssm_ba_gates", "parent", args, COUNT(args), 0, &pick) == METRALE_OK, "%s",
        metrale_last_error());
  CHECK(strcmp(pick.kernel, "ssm_ba_gates") == 0 && pick.forced == 1 && pick.verdict_count == 1 &&
            contains(pick.verdicts[0].reason, "forced"),
        "forced parent: %s, reason %s", pick.kernel, TEXT(pick.verdicts[0].reason));
  CHECK(memcmp(out, forced, sizeof(float) * GATES) == 0, "the forced parent's bytes differ");

  /* Forced by the role's alias "mma": other bytes (another summation order), the same gates. */
  poison(forced, GATES);
  CHECK(metrale_op_run_role(rt, "ssm_ba_gates", "mma", args, COUNT(args), 0, &pick) == METRALE_OK, "%s",
        metrale_last_error());
  CHECK(strcmp(pick.role, "tensor_core") == 0 && strcmp(pick.kernel, "ssm_ba_gates_mma") == 0,
        "forced mma: role %s kernel %s", pick.role, pick.kernel);
  for (int i = 0; i < GATES; ++i) {
    CHECK(fabs(forced[i] - out[i]) <= 1e-4 * (1.0 + fabs(out[i])), "mma gate_out[%d] = %g, parent %g", i, forced[i],
          out[i]);
  }

  /* Refusals are named, launch nothing and leave the pick as it was. */
  poison(forced, GATES);
  CHECK_REFUSED(metrale_op_run(rt, "no_such_op", args, COUNT(args), 0, &pick), METRALE_ERROR_ARGUMENT, "ssm_ba_gates",
                pick); /* the known ops are listed */
  CHECK(contains(metrale_last_error(), "no_such_op"), "message: %s", metrale_last_error());
  CHECK_REFUSED(metrale_op_run_role(rt, "ssm_ba_gates", "warp_specialised", args, COUNT(args), 0, &pick),
                METRALE_ERROR_ARGUMENT, "warp_specialised", pick);
  CHECK(contains(metrale_last_error(), "tensor_core"), "the roles are not listed: %s", metrale_last_error());
  args[2].name = "a_logs";
  CHECK_REFUSED(metrale_op_run(rt, "ssm_ba_gates", args, COUNT(args), 0, &pick), METRALE_ERROR_ARGUMENT, "a_logs",
                pick);
  CHECK(contains(metrale_last_error(), "no argument named"), "message: %s", metrale_last_error());
  args[2].name = "a_log";
  CHECK_REFUSED(metrale_op_run(rt, "ssm_ba_gates", args + 1, COUNT(args) - 1, 0, &pick), METRALE_ERROR_ARGUMENT, "'x'",
                pick); /* x, the first argument, is missing */
  CHECK(contains(metrale_last_error(), "missing"), "message: %s", metrale_last_error());
  args[7].value = 100, args[8].value = 100; /* K % 8 != 0 */
  CHECK_REFUSED(metrale_op_run(rt, "ssm_ba_gates", args, COUNT(args), 0, &pick), METRALE_ERROR_ARGUMENT, "K", pick);
  args[7].value = K, args[8].value = K;
  args[1].value = 0; /* a NULL weight */
  CHECK_REFUSED(metrale_op_run(rt, "ssm_ba_gates", args, COUNT(args), 0, &pick), METRALE_ERROR_ARGUMENT, "weight",
                pick);
  args[1].value = PTR(w);
  args[5].value = (uint64_t)1 << 32; /* m beyond its declared range */
  CHECK_REFUSED(metrale_op_run(rt, "ssm_ba_gates", args, COUNT(args), 0, &pick), METRALE_ERROR_ARGUMENT, "outside",
                pick);
  CHECK(contains(metrale_last_error(), "m=4294967296"), "message: %s", metrale_last_error());
  args[5].value = M;
  CHECK_REFUSED(metrale_op_run(NULL, "ssm_ba_gates", args, COUNT(args), 0, &pick), METRALE_ERROR_ARGUMENT,
                "runtime is NULL", pick);
  CHECK_REFUSED(metrale_op_run(rt, NULL, args, COUNT(args), 0, &pick), METRALE_ERROR_ARGUMENT, "op is NULL", pick);
  CHECK_REFUSED(metrale_op_run(rt, "ssm_ba_gates", NULL, 3, 0, &pick), METRALE_ERROR_ARGUMENT, "args is NULL", pick);
  args[3].name = NULL;
  CHECK_REFUSED(metrale_op_run(rt, "ssm_ba_gates", args, COUNT(args), 0, &pick), METRALE_ERROR_ARGUMENT,
                "args[3].name is NULL", pick);
  args[3].name = "dt_bias";
  CHECK(untouched(forced, GATES), "gate_out was written by a refused call");
  pick.struct_size = 8;
  CHECK(metrale_op_run(rt, "ssm_ba_gates", args, COUNT(args), 0, &pick) == METRALE_ERROR_VERSION,
        "a short pick struct was not refused");
  CHECK(untouched(forced, GATES), "gate_out was written with a short pick struct");
  /* ABI 6's field: the parent has no shape constant, so its pick names the generic form (0); an
   * ABI 5 pick struct (ending before `shape`) is filled up to its size and no further. */
  metrale_op_pick_init(&pick);
  pick.shape = 77;
  CHECK(metrale_op_run(rt, "ssm_ba_gates", args, COUNT(args), 0, &pick) == METRALE_OK, "%s", metrale_last_error());
  CHECK(pick.shape == 0, "the parent's pick names shape %u", pick.shape);
  metrale_op_pick_init(&pick);
  pick.struct_size = offsetof(metrale_op_pick, shape);
  pick.shape = 77;
  CHECK(metrale_op_run(rt, "ssm_ba_gates", args, COUNT(args), 0, &pick) == METRALE_OK, "ABI 5 pick: %s",
        metrale_last_error());
  CHECK(strcmp(pick.role, "parent") == 0 && pick.shape == 77, "an ABI 5 pick: role %s, shape %u written past its size",
        pick.role, pick.shape);
  /* The pick is optional. */
  CHECK(metrale_op_run(rt, "ssm_ba_gates", args, COUNT(args), 0, NULL) == METRALE_OK, "%s", metrale_last_error());
  CHECK(memcmp(out, forced, sizeof(float) * GATES) == 0, "a run without a pick differs");
  free(x), free(w), free(a_log), free(dt_bias), free(out), free(forced);
}

static void check_fp8_reference(const uint16_t* x, const uint8_t* q, const float* scales, const char* run) {
  for (int t = 0; t < FP8_M; ++t) {
    for (int g = 0; g < FP8_K / 128; ++g) {
      float amax = 0.0f;
      for (int i = 0; i < 128; ++i) amax = fmaxf(amax, fabsf(bf16_value(x[t * FP8_STRIDE + g * 128 + i])));
      const float scale = fmaxf(amax, 1e-10f) / 448.0f;
      CHECK(scales[t * (FP8_K / 128) + g] == scale, "%s: scale[%d][%d] = %g, reference %g", run, t, g,
            scales[t * (FP8_K / 128) + g], scale);
      for (int i = 0; i < 128; ++i) {
        const uint8_t want = e4m3_nearest(bf16_value(x[t * FP8_STRIDE + g * 128 + i]) / scale);
        const uint8_t got = q[t * FP8_K + g * 128 + i];
        CHECK(got == want, "%s: q[%d][%d] = 0x%02x, reference 0x%02x", run, t, g * 128 + i, got, want);
      }
    }
  }
}

static void check_fp8_quant(metrale_runtime* rt) {
  uint16_t* x = aligned(sizeof(uint16_t) * FP8_M * FP8_STRIDE);
  uint8_t* q = aligned(FP8_M * FP8_K);
  float* scales = aligned(sizeof(float) * FP8_M * (FP8_K / 128));
  for (int i = 0; i < FP8_M * FP8_STRIDE; ++i) x[i] = bf16_bits(uniform(-3.0f, 3.0f));
  memset(q, 0xA5, FP8_M * FP8_K);
  poison(scales, FP8_M * (FP8_K / 128));
  metrale_op_arg args[] = {{"x", PTR(x)}, {"q", PTR(q)}, {"scales", PTR(scales)},
                           {"m", FP8_M},  {"k", FP8_K},  {"x_row_stride", FP8_STRIDE}};
  metrale_op_pick pick;
  metrale_op_pick_init(&pick);
  /* The twin's lever is off (main's options): the shared kernel runs, and the verdict says why. */
  CHECK(metrale_op_run(rt, "fp8_act_quant", args, COUNT(args), 0, &pick) == METRALE_OK, "%s", metrale_last_error());
  CHECK(strcmp(pick.role, "parent") == 0 && strcmp(pick.kernel, "fp8_act_quant") == 0 && pick.verdict_count == 1 &&
            strcmp(pick.verdicts[0].role, "twin") == 0 && contains(pick.verdicts[0].reason, "not requested"),
        "pick: role %s kernel %s, %u verdicts, reason %s", pick.role, pick.kernel, pick.verdict_count,
        TEXT(pick.verdicts[0].reason));
  check_fp8_reference(x, q, scales, "guarded");

  /* The twin forced through the op's alias: the same bytes, against the same reference. */
  memset(q, 0xA5, FP8_M * FP8_K);
  poison(scales, FP8_M * (FP8_K / 128));
  CHECK(metrale_op_run_role(rt, "fp8-quant", "twin", args, COUNT(args), 0, &pick) == METRALE_OK, "%s",
        metrale_last_error());
  CHECK(strcmp(pick.op, "fp8_act_quant") == 0 && strcmp(pick.kernel, "fp8_act_quant_hopper") == 0,
        "forced twin: op %s kernel %s", pick.op, pick.kernel);
  check_fp8_reference(x, q, scales, "twin");
  /* The parent by its alias "shared". */
  CHECK(metrale_op_run_role(rt, "fp8_act_quant", "shared", args, COUNT(args), 0, &pick) == METRALE_OK, "%s",
        metrale_last_error());
  CHECK(strcmp(pick.role, "parent") == 0 && pick.forced == 1, "forced shared: role %s", pick.role);

  memset(q, 0xA5, FP8_M * FP8_K);
  /* FP8 has no tensor-core kernel: the refusal names the role asked for and the op's roles. */
  CHECK_REFUSED(metrale_op_run_role(rt, "fp8_act_quant", "mma", args, COUNT(args), 0, &pick), METRALE_ERROR_ARGUMENT,
                "'mma'", pick);
  CHECK(contains(metrale_last_error(), "parent (shared), twin"), "message: %s", metrale_last_error());
  args[4].value = 200; /* not a multiple of 128 */
  CHECK_REFUSED(metrale_op_run(rt, "fp8_act_quant", args, COUNT(args), 0, &pick), METRALE_ERROR_ARGUMENT, "128", pick);
  args[4].value = FP8_K;
  const metrale_op_arg layout[] = {{"x", PTR(x)},      {"q", PTR(q)}, {"scales", PTR(scales)},
                                   {"m", FP8_M},       {"k", FP8_K},  {"x_row_stride", FP8_STRIDE},
                                   {"scale_layout", 2}}; /* 0 or 1 */
  CHECK_REFUSED(metrale_op_run(rt, "fp8_act_quant", layout, COUNT(layout), 0, &pick), METRALE_ERROR_ARGUMENT,
                "scale_layout=2 is outside [0, 1]", pick);
  const metrale_op_arg twice[] = {{"x", PTR(x)}, {"q", PTR(q)}, {"scales", PTR(scales)},
                                  {"m", FP8_M},  {"k", FP8_K},  {"m", FP8_M}};
  CHECK_REFUSED(metrale_op_run(rt, "fp8_act_quant", twice, COUNT(twice), 0, &pick), METRALE_ERROR_ARGUMENT,
                "'m' is given twice", pick);
  for (int i = 0; i < FP8_M * FP8_K; ++i) CHECK(q[i] == 0xA5, "q[%d] written on a refusal", i);
  free(x), free(q), free(scales);
}

static void check_no_device(void) {
  /* CUDA asked for: without a GPU (no libcuda, or no device) the runtime opens with no device
     and an op call says so before it reads its arguments; with a GPU there is nothing to check. */
  metrale_runtime_options options;
  metrale_runtime_options_init(&options);
  options.backend = METRALE_BACKEND_CUDA;
  metrale_runtime* rt = NULL;
  CHECK(metrale_runtime_open(&options, &rt) == METRALE_OK, "%s", metrale_last_error());
  metrale_runtime_info info;
  metrale_runtime_info_init(&info);
  CHECK(metrale_runtime_describe(rt, &info) == METRALE_OK, "%s", metrale_last_error());
  if (info.has_device) {
    printf("a CUDA device is present: the no-device checks are skipped\n");
  } else {
    metrale_op_pick pick;
    metrale_op_pick_init(&pick);
    CHECK_REFUSED(metrale_op_run(rt, "fp8_act_quant", NULL, 0, 0, &pick), METRALE_ERROR_NO_DEVICE, "no device", pick);
  }
  metrale_runtime_close(rt);
}

static void check_registry(metrale_runtime* rt) {
  const char* broken = "template <int B> __global__ void broken(float* p) { p[0] = undefined_name * B; }\n";
  CHECK(metrale_registry_add_source(rt, "engine_broken.cuh", broken) == METRALE_OK, "%s", metrale_last_error());
  metrale_variant variant;
  metrale_variant_init(&variant);
  variant.kernel = "engine_broken", variant.source = "engine_broken.cuh", variant.name_expression = "broken<1>";
  variant.block = 1;
  uint32_t id = 0;
  CHECK(metrale_registry_declare(rt, &variant, &id) == METRALE_OK, "%s", metrale_last_error());
  metrale_build_result result;
  metrale_build_result_init(&result);
  CHECK(metrale_registry_compile(rt, id, "sm_90", &result) == METRALE_OK, "%s", metrale_last_error());
  CHECK(result.ok == 0 && result.reason != NULL, "a broken variant compiled");
  CHECK(contains(result.reason, "compile failed") && contains(result.reason, "undefined_name"), "reason: %s",
        TEXT(result.reason));
  /* On the host backend the host JIT's compile of the broken kernel fails: absent, with the reason. */
  CHECK(metrale_registry_build(rt) == METRALE_OK, "%s", metrale_last_error());
  uint64_t handle = 1;
  const char* reason = NULL;
  CHECK(metrale_registry_handle(rt, id, &handle, &reason) == METRALE_OK, "%s", metrale_last_error());
  CHECK(handle == 0 && contains(reason, "load failed"), "handle %llu, reason %s", (unsigned long long)handle,
        TEXT(reason));
  CHECK(metrale_registry_handle(rt, id + 100, &handle, &reason) == METRALE_ERROR_ARGUMENT, "an unknown id");
  CHECK(metrale_registry_handle(NULL, id, &handle, &reason) == METRALE_ERROR_ARGUMENT &&
            contains(metrale_last_error(), "runtime is NULL"),
        "a NULL runtime: %s", metrale_last_error());
  metrale_launch_config config;
  metrale_launch_config_init(&config);
  CHECK(metrale_launch(rt, 0, &config, NULL, 0, 0) == METRALE_ERROR_BACKEND, "launching handle 0 was not refused");
  CHECK(contains(metrale_last_error(), "absent"), "message: %s", metrale_last_error());
}

/* metrale_op_prepare, and a failure as data (metrale_last_error_info): no CUDA error on the host. */
static void check_prepare(metrale_runtime* rt) {
  const metrale_op_arg shape[] = {{"m", 1}, {"n", 96}, {"k", 512}, {"vheads_per_group", 3}};
  size_t prepared = 0;
  CHECK(metrale_op_prepare(rt, "ssm_ba_gates", NULL, shape, COUNT(shape), &prepared) == METRALE_OK, "%s",
        metrale_last_error());
  CHECK(prepared >= 3, "prepared %zu kernel choices", prepared); /* the pick and each role built */
  CHECK(metrale_op_prepare(rt, "ssm_ba_gates", "twin", shape, COUNT(shape), &prepared) == METRALE_OK && prepared == 1,
        "a named role: %s", metrale_last_error());
  metrale_error_info info;
  metrale_error_info_init(&info);
  CHECK(metrale_last_error_info(&info) == METRALE_OK && info.status == METRALE_OK && info.cuda_code == 0,
        "after a success: status %d", info.status);
  const metrale_op_arg bad[] = {{"m", 1}, {"n", 96}, {"k", 100}, {"vheads_per_group", 3}};
  CHECK(metrale_op_prepare(rt, "ssm_ba_gates", NULL, bad, COUNT(bad), NULL) == METRALE_ERROR_ARGUMENT &&
            contains(metrale_last_error(), "K=100"),
        "K %% 8 != 0: %s", metrale_last_error());
  CHECK(metrale_last_error_info(&info) == METRALE_OK, "info");
  CHECK(info.status == METRALE_ERROR_ARGUMENT && info.cuda_code == 0 && strcmp(info.cuda_name, "") == 0 &&
            info.sticky == 0 && info.refusal == 0 && contains(info.message, "K=100"),
        "the refusal as data: status %d, cuda %d %s, message %s", info.status, info.cuda_code, TEXT(info.cuda_name),
        TEXT(info.message));
  CHECK(strcmp(metrale_last_error(), info.message) == 0, "reading the info cleared the last error");
  CHECK(strcmp(metrale_status_name(METRALE_ERROR_CAPTURE), "capture") == 0, "the capture status's name");
  info.struct_size = 4;
  CHECK(metrale_last_error_info(&info) == METRALE_ERROR_VERSION, "a short info struct was not refused");
}

/* ABI 3: options.verify (-1 the environment, 0 off, 1 on) is what runtime_info.verify reports. */
/* A caller built against an older ABI passes a struct that ends at `ends_at`: it opens, and no
   field past the end is read (the caller sets those to values that would fail if read). */
static void check_older_struct_opens(metrale_runtime_options old, size_t ends_at, const char* what) {
  old.backend = METRALE_BACKEND_HOST;
  old.struct_size = ends_at;
  metrale_runtime* rt = NULL;
  CHECK(metrale_runtime_open(&old, &rt) == METRALE_OK, "%s: %s", what, metrale_last_error());
  metrale_runtime_close(rt);
}

static void check_verify_option(void) {
  for (int32_t asked = 0; asked <= 1; ++asked) {
    metrale_runtime_options options;
    metrale_runtime_options_init(&options);
    CHECK(options.verify == -1, "options_init sets verify %d, not -1", options.verify);
    options.backend = METRALE_BACKEND_HOST;
    options.target = "hopper";
    options.verify = asked;
    metrale_runtime* rt = NULL;
    CHECK(metrale_runtime_open(&options, &rt) == METRALE_OK, "%s", metrale_last_error());
    metrale_runtime_info info;
    metrale_runtime_info_init(&info);
    CHECK(rt != NULL && metrale_runtime_describe(rt, &info) == METRALE_OK && info.verify == asked,
          "verify %d asked, %d reported", asked, info.verify);
    metrale_runtime_close(rt);
  }
  metrale_runtime_options bad;
  metrale_runtime_options_init(&bad);
  bad.backend = METRALE_BACKEND_HOST;
  bad.verify = 2;
  metrale_runtime* rt = NULL;
  CHECK(metrale_runtime_open(&bad, &rt) == METRALE_ERROR_ARGUMENT && contains(metrale_last_error(), "options.verify"),
        "verify 2: %s", metrale_last_error());
  /* An ABI 2 caller's struct ends before verify: still accepted, verification as METRALE_VERIFY says. */
  metrale_runtime_options old;
  metrale_runtime_options_init(&old);
  old.target = "hopper";
  check_older_struct_opens(old, offsetof(metrale_runtime_options, verify), "an ABI 2 struct");
}

static void check_shapes_option(void) {
  /* options.shapes (ABI 3): pinned shape constants; a malformed entry is an argument error, an
     op or argument without a shape constant a configuration error; a version-2 struct, which
     ends before the field, still opens. */
  const struct {
    const char* shapes;
    metrale_status want;
    const char* says;
  } cases[] = {
      {"ssm_ba_gates.n=96,90", METRALE_OK, ""},
      {"ba-gates.n=96;ssm_ba_gates.n=90", METRALE_OK, ""},
      {"ssm_ba_gates.n", METRALE_ERROR_ARGUMENT, "is not <op>.<argument>=<value>"},
      {"ssm_ba_gates.n=96,x", METRALE_ERROR_ARGUMENT, "'x' in 'ssm_ba_gates.n=96,x' is not a positive integer"},
      {"ssm_ba_gates.n=0", METRALE_ERROR_ARGUMENT, "'0'"},
      {"ssm_ba_gates.k=96", METRALE_ERROR_CONFIG, "has no shape constant 'k'"},
  };
  for (size_t i = 0; i < COUNT(cases); ++i) {
    metrale_runtime_options options;
    metrale_runtime_options_init(&options);
    options.backend = METRALE_BACKEND_HOST;
    options.target = "hopper";
    options.shapes = cases[i].shapes;
    metrale_runtime* rt = NULL;
    const metrale_status status = metrale_runtime_open(&options, &rt);
    CHECK(status == cases[i].want && (status == METRALE_OK || contains(metrale_last_error(), cases[i].says)),
          "shapes '%s': status %d, %s", cases[i].shapes, (int)status, metrale_last_error());
    metrale_runtime_close(rt);
  }
  metrale_runtime_options old;
  metrale_runtime_options_init(&old);
  old.shapes = "no.such=1";
  check_older_struct_opens(old, offsetof(metrale_runtime_options, shapes), "a version-2 options struct");
}

static void check_remote_cache_option(void) {
  /* options.remote_cache (ABI 5): a malformed URL fails the open naming the option, the value and
     the rule; a well-formed one to a port nothing listens on opens (Redis down never fails a
     call); "" turns the variable off; a struct ending before the field (ABI 4's) still opens. */
  metrale_runtime_options options;
  metrale_runtime_options_init(&options);
  options.backend = METRALE_BACKEND_HOST;
  options.target = "hopper";
  options.remote_cache = "redis://cache:port";
  metrale_runtime* rt = NULL;
  CHECK(metrale_runtime_open(&options, &rt) == METRALE_ERROR_CONFIG &&
            contains(metrale_last_error(), "remote_cache='redis://cache:port'") &&
            contains(metrale_last_error(), "redis://HOST:PORT[/DB]"),
        "a malformed remote_cache: %s", metrale_last_error());
  options.remote_cache = "redis://127.0.0.1:1";
  CHECK(metrale_runtime_open(&options, &rt) == METRALE_OK, "an unreachable remote_cache: %s", metrale_last_error());
  metrale_runtime_close(rt);
  options.remote_cache = "";
  CHECK(metrale_runtime_open(&options, &rt) == METRALE_OK, "remote_cache \"\": %s", metrale_last_error());
  metrale_runtime_close(rt);
  metrale_runtime_options old;
  metrale_runtime_options_init(&old);
  old.remote_cache = "not read";
  check_older_struct_opens(old, offsetof(metrale_runtime_options, remote_cache), "an ABI 4 options struct");
}

static void check_compile_timeout_option(void) {
  /* options.compile_timeout_s (ABI 5): negative, NaN or infinite fails the open naming the field
     and the rule; a positive limit opens; a struct ending before the field is not read. */
  metrale_runtime_options options;
  metrale_runtime_options_init(&options);
  options.backend = METRALE_BACKEND_HOST;
  options.target = "hopper";
  metrale_runtime* rt = NULL;
  const double refused[] = {-1.0, NAN, INFINITY};
  for (size_t i = 0; i < COUNT(refused); ++i) {
    options.compile_timeout_s = refused[i];
    CHECK(metrale_runtime_open(&options, &rt) == METRALE_ERROR_ARGUMENT &&
              contains(metrale_last_error(), "options.compile_timeout_s is") &&
              contains(metrale_last_error(), "a positive number of seconds"),
          "compile_timeout_s %g: %s", refused[i], metrale_last_error());
  }
  options.compile_timeout_s = 30.0;
  CHECK(metrale_runtime_open(&options, &rt) == METRALE_OK, "compile_timeout_s 30: %s", metrale_last_error());
  metrale_runtime_close(rt);
  metrale_runtime_options old;
  metrale_runtime_options_init(&old);
  old.compile_timeout_s = -5.0;
  check_older_struct_opens(old, offsetof(metrale_runtime_options, compile_timeout_s),
                           "a struct without compile_timeout_s");
}

int main(void) {
  CHECK(strcmp(metrale_version(), "") != 0 && metrale_abi_version() == METRALE_ABI_VERSION, "versions");
  const metrale_lever_override levers[] = {{"fp8_act_quant_hopper", 0}};
  metrale_runtime_options options;
  metrale_runtime_options_init(&options);
  options.backend = METRALE_BACKEND_HOST;
  options.target = "hopper";
  options.levers = levers, options.lever_count = COUNT(levers);
  metrale_runtime* rt = NULL;
  if (metrale_runtime_open(&options, &rt) != METRALE_OK) {
    fprintf(stderr, "open: %s\n", metrale_last_error());
    return 1;
  }
  metrale_runtime_info info;
  metrale_runtime_info_init(&info);
  CHECK(metrale_runtime_describe(rt, &info) == METRALE_OK, "%s", metrale_last_error());
  CHECK(info.has_device == 1 && strcmp(info.target, "hopper") == 0 && info.sm_count == 132, "%s on %s, %u SMs",
        info.device, info.target, info.sm_count);

  check_ba_gates(rt);
  check_fp8_quant(rt);
  check_prepare(rt);
  check_no_device();
  check_shapes_option();
  check_remote_cache_option();
  check_compile_timeout_option();
  check_registry(rt);
  check_verify_option();
  metrale_runtime_close(rt);
  if (failures != 0) {
    fprintf(stderr, "%d checks failed\n", failures);
    return 1;
  }
  printf("all C ABI checks passed\n");
  return 0;
}
