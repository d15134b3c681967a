/* capi_host_ops.c: a C99 engine's view of metrale.h (nothing else of the library): opens a
 * runtime on the host backend, runs both ops against small references computed here, checks
 * that refusals are named and write nothing, and gets the named reason of a variant that fails
 * to compile. Exit 0 when every check holds; each failed check prints what differed. */
#define _POSIX_C_SOURCE 200112L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capi_check.h"
#include "metrale/metrale.h"

static uint16_t bf16_bits(float value) {
  uint32_t bits;
  memcpy(&bits, &value, sizeof bits);
  return (uint16_t)(bits >> 16);
}
static float bf16_value(uint16_t bits) {
  uint32_t wide = (uint32_t)bits << 16;
  float value;
  memcpy(&value, &wide, sizeof value);
  return value;
}
static void* aligned(size_t bytes) {
  void* p = NULL;
  return posix_memalign(&p, 256, bytes) == 0 ? p : NULL;
}
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
  metrale_ba_gates_args args;
  metrale_ba_gates_args_init(&args);
  args.x = (uint64_t)(uintptr_t)x; /* device addresses; host ones on the host backend */
  args.weight = (uint64_t)(uintptr_t)w;
  args.a_log = (uint64_t)(uintptr_t)a_log;
  args.dt_bias = (uint64_t)(uintptr_t)dt_bias;
  args.gate_out = (uint64_t)(uintptr_t)gate_out;
  args.m = m, args.n = 8, args.k = 256, args.k_stride = 256, args.gate_stride = 8;
  args.nv = 4, args.vheads_per_group = 2;
  metrale_pick pick;
  const metrale_status status = metrale_ssm_ba_gates(rt, &args, 0 /* stream */, &pick);
  if (status == METRALE_OK) {
    printf("ran %s (%s)\n", pick.kernel, pick.twin ? "the twin" : pick.reason);
  } else {
    fprintf(stderr, "ssm_ba_gates: %s\n", metrale_last_error());
  }
  metrale_runtime_close(rt);
  return status == METRALE_OK ? 0 : 1;
}
/* ---- README: end ---- */

enum { M = 5, N = 8, K = 256, NV = 4, VPG = 2, FP8_M = 3, FP8_K = 256, FP8_STRIDE = 264 };

static void check_ba_gates(metrale_runtime* rt) {
  uint16_t* x = aligned(sizeof(uint16_t) * M * K);
  uint16_t* w = aligned(sizeof(uint16_t) * N * K);
  float* a_log = aligned(sizeof(float) * NV);
  float* dt_bias = aligned(sizeof(float) * NV);
  float* out = aligned(sizeof(float) * M * 2 * NV);
  float* twin_out = aligned(sizeof(float) * M * 2 * NV);
  for (int i = 0; i < M * K; ++i) x[i] = bf16_bits(uniform(-1.0f, 1.0f));
  for (int i = 0; i < N * K; ++i) w[i] = bf16_bits(uniform(-0.2f, 0.2f));
  for (int i = 0; i < NV; ++i) a_log[i] = uniform(-1.0f, 1.0f), dt_bias[i] = uniform(-1.0f, 1.0f);
  for (int i = 0; i < M * 2 * NV; ++i) memcpy(&out[i], &kPoison, 4), memcpy(&twin_out[i], &kPoison, 4);

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
  /* The forced twin computes the same bytes as the parent. */
  metrale_ba_gates_args args;
  metrale_ba_gates_args_init(&args);
  args.x = (uint64_t)(uintptr_t)x, args.weight = (uint64_t)(uintptr_t)w;
  args.a_log = (uint64_t)(uintptr_t)a_log, args.dt_bias = (uint64_t)(uintptr_t)dt_bias;
  args.gate_out = (uint64_t)(uintptr_t)twin_out;
  args.m = M, args.n = N, args.k = K, args.k_stride = K, args.gate_stride = 2 * NV, args.nv = NV;
  args.vheads_per_group = VPG, args.kernel = METRALE_KERNEL_TWIN;
  metrale_pick pick = {NULL, -1, NULL, -1, NULL};
  CHECK(metrale_ssm_ba_gates(rt, &args, 0, &pick) == METRALE_OK, "%s", metrale_last_error());
  CHECK(pick.twin == 1 && pick.kernel && strcmp(pick.kernel, "ssm_ba_gates_hopper") == 0, "forced twin: %s",
        pick.kernel ? pick.kernel : "(null)");
  CHECK(memcmp(out, twin_out, sizeof(float) * M * 2 * NV) == 0, "the twin's bytes differ from the parent's");

  /* The forced tensor-core kernel: other bytes (another summation order), the same gates. */
  for (int i = 0; i < M * 2 * NV; ++i) memcpy(&twin_out[i], &kPoison, 4);
  args.kernel = METRALE_KERNEL_MMA;
  CHECK(metrale_ssm_ba_gates(rt, &args, 0, &pick) == METRALE_OK, "%s", metrale_last_error());
  CHECK(pick.tensor_core == 1 && pick.twin == 0 && pick.kernel && strcmp(pick.kernel, "ssm_ba_gates_mma") == 0,
        "forced mma: %s", pick.kernel ? pick.kernel : "(null)");
  for (int i = 0; i < M * 2 * NV; ++i) {
    CHECK(fabs(twin_out[i] - out[i]) <= 1e-4 * (1.0 + fabs(out[i])), "mma gate_out[%d] = %g, parent %g", i, twin_out[i],
          out[i]);
  }

  /* Refusals are named and write nothing. */
  for (int i = 0; i < M * 2 * NV; ++i) memcpy(&twin_out[i], &kPoison, 4);
  args.kernel = METRALE_KERNEL_AUTO;
  args.k = 100, args.k_stride = 100; /* K % 8 != 0 */
  CHECK(metrale_ssm_ba_gates(rt, &args, 0, &pick) == METRALE_ERROR_ARGUMENT, "K = 100 was not refused");
  CHECK(strstr(metrale_last_error(), "K") != NULL, "message: %s", metrale_last_error());
  args.k = K, args.k_stride = K, args.weight = 0;
  CHECK(metrale_ssm_ba_gates(rt, &args, 0, &pick) == METRALE_ERROR_ARGUMENT, "a null weight was not refused");
  CHECK(strstr(metrale_last_error(), "weight") != NULL, "message: %s", metrale_last_error());
  for (int i = 0; i < M * 2 * NV; ++i) CHECK(memcmp(&twin_out[i], &kPoison, 4) == 0, "gate_out[%d] written", i);
  args.struct_size = 8;
  CHECK(metrale_ssm_ba_gates(rt, &args, 0, &pick) == METRALE_ERROR_VERSION, "a short struct was not refused");

  /* explain agrees with what the op ran: M = 5 is below the twin's token floor. */
  metrale_explanation why;
  metrale_explanation_init(&why);
  CHECK(metrale_explain_ssm_ba_gates(rt, M, N, K, 0, &why) == METRALE_OK, "%s", metrale_last_error());
  CHECK(why.pick.twin == 0 && why.pick.reason && strstr(why.pick.reason, "too few tokens"), "explain: %s",
        why.pick.reason ? why.pick.reason : "(null)");
  CHECK(why.twin_min_m == 2 * why.sm_count, "twin_min_m %u at %u SMs", why.twin_min_m, why.sm_count);
  CHECK(
      why.pick.tensor_core == 0 && why.pick.tensor_core_reason && strstr(why.pick.tensor_core_reason, "too few tokens"),
      "explain's tensor-core verdict: %s", why.pick.tensor_core_reason ? why.pick.tensor_core_reason : "(null)");
  /* Tiles of 128 tokens; K = 256 is 4 chunks of 64, so a tile splits over at most 4 CTAs and
     a twelfth of the SMs takes ceil(ceil(SMs / 12) / 4) tiles. */
  CHECK(why.tensor_core_requested == 1 && why.tensor_core_present == 1 &&
            why.tensor_core_min_m == 128 * (((why.sm_count + 11) / 12 + 3) / 4),
        "tensor_core_min_m %u at %u SMs", why.tensor_core_min_m, why.sm_count);
  free(x), free(w), free(a_log), free(dt_bias), free(out), free(twin_out);
}

/* The nearest e4m3fn code to v (ties to the even code), saturating at +-448. */
static uint8_t e4m3_nearest(float v) {
  const uint8_t sign = signbit(v) ? 0x80 : 0x00;
  const double a = fabs((double)v);
  int best = 0;
  double best_diff = INFINITY;
  for (int code = 0; code <= 0x7e; ++code) {
    const int e = code >> 3, mant = code & 7;
    const double value = e == 0 ? ldexp(mant, -9) : ldexp(8 + mant, e - 10);
    const double diff = fabs(value - a);
    if (diff < best_diff || (diff == best_diff && (code & 1) == 0)) best = code, best_diff = diff;
  }
  return (uint8_t)(sign | best);
}

static void check_fp8_quant(metrale_runtime* rt) {
  uint16_t* x = aligned(sizeof(uint16_t) * FP8_M * FP8_STRIDE);
  uint8_t* q = aligned(FP8_M * FP8_K);
  float* scales = aligned(sizeof(float) * FP8_M * (FP8_K / 128));
  for (int i = 0; i < FP8_M * FP8_STRIDE; ++i) x[i] = bf16_bits(uniform(-3.0f, 3.0f));
  memset(q, 0xA5, FP8_M * FP8_K);
  for (int i = 0; i < FP8_M * (FP8_K / 128); ++i) memcpy(&scales[i], &kPoison, 4);
  metrale_fp8_quant_args args;
  metrale_fp8_quant_args_init(&args);
  args.x = (uint64_t)(uintptr_t)x, args.q = (uint64_t)(uintptr_t)q, args.scales = (uint64_t)(uintptr_t)scales;
  args.m = FP8_M, args.k = FP8_K, args.x_row_stride = FP8_STRIDE;
  metrale_pick pick = {NULL, -1, NULL, -1, NULL};
  CHECK(metrale_fp8_act_quant(rt, &args, 0, &pick) == METRALE_OK, "%s", metrale_last_error());
  CHECK(pick.kernel != NULL && pick.reason != NULL, "the pick names a kernel and a reason");
  for (int t = 0; t < FP8_M; ++t) {
    for (int g = 0; g < FP8_K / 128; ++g) {
      float amax = 0.0f;
      for (int i = 0; i < 128; ++i) amax = fmaxf(amax, fabsf(bf16_value(x[t * FP8_STRIDE + g * 128 + i])));
      const float scale = fmaxf(amax, 1e-10f) / 448.0f;
      CHECK(scales[t * (FP8_K / 128) + g] == scale, "scale[%d][%d] = %g, reference %g", t, g,
            scales[t * (FP8_K / 128) + g], scale);
      for (int i = 0; i < 128; ++i) {
        const uint8_t want = e4m3_nearest(bf16_value(x[t * FP8_STRIDE + g * 128 + i]) / scale);
        const uint8_t got = q[t * FP8_K + g * 128 + i];
        CHECK(got == want, "q[%d][%d] = 0x%02x, reference 0x%02x", t, g * 128 + i, got, want);
      }
    }
  }
  memset(q, 0xA5, FP8_M * FP8_K);
  args.kernel = METRALE_KERNEL_MMA; /* FP8 has no tensor-core kernel */
  CHECK(metrale_fp8_act_quant(rt, &args, 0, &pick) == METRALE_ERROR_ARGUMENT, "MMA for FP8 was not refused");
  CHECK(strstr(metrale_last_error(), "tensor-core") != NULL, "message: %s", metrale_last_error());
  args.kernel = METRALE_KERNEL_AUTO;
  args.k = 200; /* not a multiple of 128 */
  CHECK(metrale_fp8_act_quant(rt, &args, 0, &pick) == METRALE_ERROR_ARGUMENT, "K = 200 was not refused");
  CHECK(strstr(metrale_last_error(), "128") != NULL, "message: %s", metrale_last_error());
  for (int i = 0; i < FP8_M * FP8_K; ++i) CHECK(q[i] == 0xA5, "q[%d] written on a refusal", i);
  free(x), free(q), free(scales);
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
  CHECK(result.reason && strstr(result.reason, "compile failed") && strstr(result.reason, "undefined_name"),
        "reason: %s", result.reason ? result.reason : "(null)");
  /* On the host backend the host JIT's compile of the broken kernel fails: absent, with the reason. */
  CHECK(metrale_registry_build(rt) == METRALE_OK, "%s", metrale_last_error());
  uint64_t handle = 1;
  const char* reason = NULL;
  CHECK(metrale_registry_handle(rt, id, &handle, &reason) == METRALE_OK, "%s", metrale_last_error());
  CHECK(handle == 0 && reason != NULL && strstr(reason, "load failed"), "handle %llu, reason %s",
        (unsigned long long)handle, reason ? reason : "(null)");
  CHECK(metrale_registry_handle(rt, id + 100, &handle, &reason) == METRALE_ERROR_ARGUMENT, "an unknown id");
  metrale_launch_config config;
  metrale_launch_config_init(&config);
  CHECK(metrale_launch(rt, 0, &config, NULL, 0, 0) == METRALE_ERROR_BACKEND, "launching handle 0 was not refused");
  CHECK(strstr(metrale_last_error(), "absent") != NULL, "message: %s", metrale_last_error());
}

int main(void) {
  CHECK(strcmp(metrale_version(), "") != 0 && metrale_abi_version() == METRALE_ABI_VERSION, "versions");
  metrale_runtime_options options;
  metrale_runtime_options_init(&options);
  options.backend = METRALE_BACKEND_HOST;
  options.target = "hopper";
  options.fp8_act_quant_hopper = METRALE_LEVER_OFF;
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
  CHECK(strcmp(info.levers[1].name, "fp8_act_quant_hopper") == 0 && info.levers[1].value == 0 &&
            strcmp(info.levers[1].provenance, "options") == 0,
        "lever %s = %d from %s", info.levers[1].name, info.levers[1].value, info.levers[1].provenance);
  CHECK(strcmp(info.levers[0].provenance, "options") != 0, "lever 0 from %s", info.levers[0].provenance);

  metrale_runtime_options bad;
  metrale_runtime_options_init(&bad);
  bad.backend = METRALE_BACKEND_HOST, bad.target = "no-such-target";
  metrale_runtime* none = NULL;
  CHECK(metrale_runtime_open(&bad, &none) == METRALE_ERROR_CONFIG && none == NULL, "an unknown target opened");
  CHECK(strstr(metrale_last_error(), "no-such-target") != NULL, "message: %s", metrale_last_error());

  check_ba_gates(rt);
  check_fp8_quant(rt);
  check_registry(rt);
  metrale_runtime_close(rt);
  if (failures != 0) {
    fprintf(stderr, "%d checks failed\n", failures);
    return 1;
  }
  printf("all C ABI checks passed\n");
  return 0;
}
