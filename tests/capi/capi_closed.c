/* capi_closed.c: a runtime shut down through metrale.h (metrale_runtime_shutdown): every later
 * call on the handle returns METRALE_ERROR_CLOSED with "this Runtime is closed" in the last
 * error and writes nothing; a second shutdown is OK; a shutdown from inside the log callback of
 * a call on the same handle returns at once (no deadlock), that call finishes with the right
 * result and the next one is refused; metrale_runtime_close then frees the handle. Exit 0 when
 * every check holds; each failed check prints what differed. */
#define _POSIX_C_SOURCE 200112L

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "capi_check.h"
#include "metrale/metrale.h"

enum { kM = 2, kK = 256 };

static uint16_t x[kM * kK];
static uint8_t q[kM * kK];
static float scales[kM * (kK / 128)];

/* The e4m3 scale of one 128-wide group of x's row `row`: amax / 448 (the op's rule). */
static float want_scale(int row, int group) {
  float amax = 1e-10f;
  for (int i = 0; i < 128; ++i) {
    uint32_t bits = (uint32_t)x[row * kK + group * 128 + i] << 16;
    float v;
    memcpy(&v, &bits, sizeof v);
    amax = fabsf(v) > amax ? fabsf(v) : amax;
  }
  return amax / 448.0f;
}

static void poison(void) {
  memset(q, 0xa5, sizeof q);
  for (size_t i = 0; i < COUNT(scales); ++i) {
    scales[i] = NAN;
  }
}

static int scales_right(void) {
  for (int row = 0; row < kM; ++row) {
    for (int g = 0; g < kK / 128; ++g) {
      if (scales[row * (kK / 128) + g] != want_scale(row, g)) {
        return 0;
      }
    }
  }
  return 1;
}

static int untouched(void) {
  for (size_t i = 0; i < COUNT(q); ++i) {
    if (q[i] != 0xa5) {
      return 0;
    }
  }
  for (size_t i = 0; i < COUNT(scales); ++i) {
    if (!isnan(scales[i])) {
      return 0;
    }
  }
  return 1;
}

static metrale_status run_fp8(metrale_runtime* rt) {
  const metrale_op_arg args[] = {{"x", PTR(x)}, {"q", PTR(q)}, {"scales", PTR(scales)}, {"m", kM}, {"k", kK}};
  return metrale_op_run(rt, "fp8_act_quant", args, COUNT(args), 0, NULL);
}

static int closed(metrale_status status) {
  return status == METRALE_ERROR_CLOSED && strstr(metrale_last_error(), "this Runtime is closed") != NULL;
}

static metrale_runtime* open_host(void) {
  metrale_runtime_options options;
  metrale_runtime_options_init(&options);
  options.backend = METRALE_BACKEND_HOST;
  options.verify = 0;
  metrale_runtime* rt = NULL;
  const metrale_status status = metrale_runtime_open(&options, &rt);
  CHECK(status == METRALE_OK, "open: %s", metrale_last_error());
  return rt;
}

/* The log callback: shuts down the runtime it is given from inside the call that logs. */
static int shutdowns_in_callback = 0;
static metrale_status callback_status = METRALE_OK;
static void shut_down_from_callback(void* user, int32_t level, const char* line) {
  (void)level;
  (void)line;
  if (user != NULL && shutdowns_in_callback == 0) {
    ++shutdowns_in_callback;
    callback_status = metrale_runtime_shutdown((metrale_runtime*)user);
  }
}

static void every_call_after_shutdown_is_refused(void) {
  metrale_runtime* rt = open_host();
  if (rt == NULL) {
    return;
  }
  poison();
  CHECK(run_fp8(rt) == METRALE_OK, "a call before shutdown: %s", metrale_last_error());
  CHECK(scales_right(), "the call before shutdown wrote wrong scales");
  CHECK(metrale_runtime_shutdown(rt) == METRALE_OK, "shutdown: %s", metrale_last_error());
  CHECK(metrale_runtime_shutdown(rt) == METRALE_OK, "a second shutdown: %s", metrale_last_error());
  CHECK(strcmp(metrale_status_name(METRALE_ERROR_CLOSED), "closed") == 0, "%s",
        metrale_status_name(METRALE_ERROR_CLOSED));

  poison();
  CHECK(closed(run_fp8(rt)), "op_run: %s", metrale_last_error());
  CHECK(untouched(), "a refused call wrote its outputs");
  const metrale_op_arg shape[] = {{"m", kM}, {"k", kK}};
  size_t prepared = 0;
  CHECK(closed(metrale_op_prepare(rt, "fp8_act_quant", NULL, shape, COUNT(shape), &prepared)), "prepare: %s",
        metrale_last_error());
  metrale_runtime_info info;
  metrale_runtime_info_init(&info);
  CHECK(closed(metrale_runtime_describe(rt, &info)), "describe: %s", metrale_last_error());
  metrale_op_info op;
  metrale_op_info_init(&op);
  CHECK(closed(metrale_op_find(rt, "fp8_act_quant", &op)), "op_find: %s", metrale_last_error());
  metrale_lever_info lever;
  metrale_lever_info_init(&lever);
  CHECK(closed(metrale_lever_get(rt, 0, &lever)), "lever_get: %s", metrale_last_error());
  uint32_t id = 0;
  metrale_variant variant;
  metrale_variant_init(&variant);
  variant.kernel = "k";
  variant.source = "k.cuh";
  variant.name_expression = "k<1>";
  CHECK(closed(metrale_registry_declare(rt, &variant, &id)), "registry_declare: %s", metrale_last_error());
  CHECK(closed(metrale_synchronize(rt, 0)), "synchronize: %s", metrale_last_error());
  metrale_runtime_close(rt);
}

static void shutdown_from_the_log_callback_of_a_call(void) {
  metrale_runtime* rt = open_host();
  if (rt == NULL) {
    return;
  }
  metrale_set_log_callback(shut_down_from_callback, rt);
  poison();
  /* The first fp8 call of the process logs its kernel choice, inside the call. */
  const metrale_status first = run_fp8(rt);
  metrale_set_log_callback(NULL, NULL);
  CHECK(shutdowns_in_callback == 1, "the callback ran %d times (the first call logs once)", shutdowns_in_callback);
  CHECK(callback_status == METRALE_OK, "shutdown inside the callback: %d", (int)callback_status);
  CHECK(first == METRALE_OK, "the call whose callback shut down finishes: %s", metrale_last_error());
  CHECK(scales_right(), "that call wrote wrong scales");
  poison();
  CHECK(closed(run_fp8(rt)), "the next call: %s", metrale_last_error());
  CHECK(untouched(), "a refused call wrote its outputs");
  metrale_runtime_close(rt); /* waits for the closer and frees */
}

int main(void) {
  for (size_t i = 0; i < COUNT(x); ++i) {
    const float v = uniform(-4.0f, 4.0f);
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    x[i] = (uint16_t)(bits >> 16);
  }
  shutdown_from_the_log_callback_of_a_call(); /* first: the op's first call of the process logs */
  every_call_after_shutdown_is_refused();
  if (failures != 0) {
    fprintf(stderr, "%d C ABI closed checks failed\n", failures);
    return 1;
  }
  printf("all C ABI closed checks passed\n");
  return 0;
}
