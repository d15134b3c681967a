/* capi_host_silu.c: the third op, silu_mul_fp8_quant, from C99 through metrale.h alone: by name
 * on the host backend, gate and up the two halves of one [M][2K] row (row strides 2K), M not a
 * multiple of 4; the guard's pick and each role forced write the codes and scales of a reference
 * computed here (h = bf16(silu(g) * u) rounded to nearest even in float with expf, then the
 * per-128 group FP8 quant), outputs poisoned first; a K off the group size is refused, named,
 * and writes nothing. Exit 0 when every check holds. */
#define _POSIX_C_SOURCE 200112L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capi_check.h"
#include "metrale/metrale.h"

enum { M = 5, K = 384, GROUPS = K / 128 };

static const uint32_t kPoison = 0x7fc00bad; /* a NaN no kernel writes */

/* bf16 bits of v, rounded to nearest even (h is rounded once, so the reference must be). */
static uint16_t bf16_round(float v) {
  uint32_t bits;
  memcpy(&bits, &v, sizeof bits);
  return (uint16_t)((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

static float h_of(uint16_t g_bits, uint16_t u_bits) {
  const float g = bf16_value(g_bits), u = bf16_value(u_bits);
  return bf16_value(bf16_round((g / (1.0f + expf(-g))) * u));
}

static void check_against_reference(const uint16_t* gate_up, const uint8_t* q, const float* scales, const char* run) {
  for (int t = 0; t < M; ++t) {
    for (int g = 0; g < GROUPS; ++g) {
      float h[128], amax = 0.0f;
      for (int i = 0; i < 128; ++i) {
        const int c = g * 128 + i;
        h[i] = h_of(gate_up[t * 2 * K + c], gate_up[t * 2 * K + K + c]);
        amax = fmaxf(amax, fabsf(h[i]));
      }
      const float scale = fmaxf(amax, 1e-10f) / 448.0f;
      CHECK(scales[t * GROUPS + g] == scale, "%s: scale[%d][%d] = %g, reference %g", run, t, g, scales[t * GROUPS + g],
            scale);
      for (int i = 0; i < 128; ++i) {
        const uint8_t want = e4m3_nearest(h[i] / scale), got = q[t * K + g * 128 + i];
        CHECK(got == want, "%s: q[%d][%d] = 0x%02x, reference 0x%02x", run, t, g * 128 + i, got, want);
      }
    }
  }
}

int main(void) {
  metrale_runtime_options options;
  metrale_runtime_options_init(&options);
  options.backend = METRALE_BACKEND_HOST;
  options.target = "hopper";
  metrale_runtime* rt = NULL;
  if (metrale_runtime_open(&options, &rt) != METRALE_OK) {
    fprintf(stderr, "open: %s\n", metrale_last_error());
    return 1;
  }
  uint16_t* gate_up = aligned(sizeof(uint16_t) * M * 2 * K);
  uint8_t* q = aligned(M * K);
  float* scales = aligned(sizeof(float) * M * GROUPS);
  for (int i = 0; i < M * 2 * K; ++i) gate_up[i] = bf16_bits(uniform(-4.0f, 4.0f));
  metrale_op_arg args[] = {
      {"gate", PTR(gate_up)},     {"up", PTR(gate_up + K)}, {"q", PTR(q)}, {"scales", PTR(scales)}, {"m", M}, {"k", K},
      {"gate_row_stride", 2 * K}, {"up_row_stride", 2 * K}};
  const char* roles[] = {NULL, "parent", "twin"};
  for (int r = 0; r < 3; ++r) {
    memset(q, 0xA5, M * K);
    for (int i = 0; i < M * GROUPS; ++i) memcpy(&scales[i], &kPoison, 4);
    metrale_op_pick pick;
    metrale_op_pick_init(&pick);
    const metrale_status status =
        roles[r] == NULL ? metrale_op_run(rt, "silu_mul_fp8_quant", args, COUNT(args), 0, &pick)
                         : metrale_op_run_role(rt, "silu_mul_fp8_quant", roles[r], args, COUNT(args), 0, &pick);
    CHECK(status == METRALE_OK, "%s: %s", TEXT(roles[r]), metrale_last_error());
    if (status != METRALE_OK) continue;
    CHECK(strcmp(pick.op, "silu_mul_fp8_quant") == 0 && (roles[r] == NULL || strcmp(pick.role, roles[r]) == 0),
          "pick: op %s role %s", pick.op, pick.role);
    check_against_reference(gate_up, q, scales, roles[r] == NULL ? "guarded" : roles[r]);
  }
  /* K = 200: refused, named, nothing written. */
  memset(q, 0xA5, M * K);
  args[5].value = 200;
  CHECK(metrale_op_run(rt, "silu_mul_fp8_quant", args, COUNT(args), 0, NULL) == METRALE_ERROR_ARGUMENT &&
            contains(metrale_last_error(), "K=200 is not a multiple of the group size 128"),
        "K = 200: %s", metrale_last_error());
  for (int i = 0; i < M * K; ++i) CHECK(q[i] == 0xA5, "q[%d] written on a refusal", i);
  metrale_runtime_close(rt);
  free(gate_up), free(q), free(scales);
  if (failures != 0) {
    fprintf(stderr, "%d checks failed\n", failures);
    return 1;
  }
  printf("all C ABI silu_mul_fp8_quant checks passed\n");
  return 0;
}
