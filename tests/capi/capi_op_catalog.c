/* capi_op_catalog.c: what a C engine can learn of a runtime through metrale.h without running
 * anything: its levers by index and [defaults] key with their provenance (set by name in the
 * options: "options"), its ops by index, name and alias with their roles and arguments, and
 * explain's answer for both seed ops (the pick at a shape and each guarded role's smallest M,
 * against the guards' documented floors computed here). Refusals are named. Exit 0 when every
 * check holds. */
#define _POSIX_C_SOURCE 200112L

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "capi_check.h"
#include "metrale/metrale.h"

static metrale_runtime* open_host(const metrale_lever_override* levers, size_t count) {
  metrale_runtime_options options;
  metrale_runtime_options_init(&options);
  options.backend = METRALE_BACKEND_HOST;
  options.target = "hopper";
  options.levers = levers, options.lever_count = count;
  metrale_runtime* rt = NULL;
  CHECK(metrale_runtime_open(&options, &rt) == METRALE_OK, "open: %s", metrale_last_error());
  return rt;
}

static void check_levers(void) {
  const metrale_lever_override set[] = {{"fp8_act_quant_hopper", 0}, {"ssm_ba_gates_tensor_core", 1}};
  metrale_runtime* rt = open_host(set, COUNT(set));
  if (rt == NULL) return;
  metrale_runtime_info info;
  metrale_runtime_info_init(&info);
  CHECK(metrale_runtime_describe(rt, &info) == METRALE_OK, "%s", metrale_last_error());
  /* Every lever listed once, each by its key; those set here say so. */
  int seen_fp8 = 0, seen_twin = 0, seen_tc = 0;
  for (size_t i = 0; i < info.lever_count; ++i) {
    metrale_lever_info lever;
    metrale_lever_info_init(&lever);
    CHECK(metrale_lever_get(rt, i, &lever) == METRALE_OK, "%s", metrale_last_error());
    const int options = strcmp(lever.provenance, "options") == 0;
    if (strcmp(lever.name, "fp8_act_quant_hopper") == 0) {
      ++seen_fp8;
      CHECK(lever.value == 0 && options && strcmp(lever.env_var, "METRALE_FP8_ACT_QUANT_HOPPER") == 0 &&
                contains(lever.origin, "fp8_act_quant_hopper = off"),
            "%s = %d from %s (%s), %s", lever.name, lever.value, lever.provenance, lever.origin, lever.env_var);
    } else if (strcmp(lever.name, "ssm_ba_gates_tensor_core") == 0) {
      ++seen_tc;
      CHECK(lever.value == 1 && options, "%s = %d from %s", lever.name, lever.value, lever.provenance);
    } else if (strcmp(lever.name, "ssm_ba_gates_hopper") == 0) {
      ++seen_twin;
      CHECK(lever.value == 1 && strcmp(lever.provenance, "file") == 0 && contains(lever.origin, "HARDWARE.toml") &&
                strcmp(lever.env_var, "METRALE_SSM_BA_GATES_HOPPER") == 0,
            "%s = %d from %s (%s)", lever.name, lever.value, lever.provenance, lever.origin);
    }
  }
  CHECK(seen_fp8 == 1 && seen_twin == 1 && seen_tc == 1, "levers listed: fp8 %d, twin %d, tensor core %d", seen_fp8,
        seen_twin, seen_tc);
  metrale_lever_info lever;
  metrale_lever_info_init(&lever);
  CHECK(metrale_lever_find(rt, "fp8_act_quant_hopper", &lever) == METRALE_OK && lever.value == 0 &&
            strcmp(lever.provenance, "options") == 0,
        "find: %s", metrale_last_error());
  lever.value = 7;
  CHECK(metrale_lever_find(rt, "no_such_lever", &lever) == METRALE_ERROR_ARGUMENT &&
            contains(metrale_last_error(), "no_such_lever") && contains(metrale_last_error(), "ssm_ba_gates_hopper"),
        "an unknown lever: %s", metrale_last_error());
  CHECK(lever.value == 7, "the info was written on a refusal");
  CHECK(metrale_lever_get(rt, info.lever_count, &lever) == METRALE_ERROR_ARGUMENT &&
            contains(metrale_last_error(), "outside"),
        "an index past the levers: %s", metrale_last_error());
  lever.struct_size = 4;
  CHECK(metrale_lever_get(rt, 0, &lever) == METRALE_ERROR_VERSION, "a short lever struct: %s", metrale_last_error());
  CHECK(
      metrale_lever_get(NULL, 0, &lever) == METRALE_ERROR_ARGUMENT && contains(metrale_last_error(), "runtime is NULL"),
      "a NULL runtime: %s", metrale_last_error());
  metrale_runtime_close(rt);

  /* Settings no op declares, or that cannot be a lever's, fail the open and name the setting. */
  const struct {
    metrale_lever_override lever[2];
    size_t count;
    metrale_status status;
    const char* part;
  } bad[] = {
      {{{"no_such_lever", 1}, {NULL, 0}}, 1, METRALE_ERROR_CONFIG, "no_such_lever"},
      {{{"ssm_ba_gates_hopper", 2}, {NULL, 0}}, 1, METRALE_ERROR_ARGUMENT, "value 2 is not 0 (off) or 1 (on)"},
      {{{"ssm_ba_gates_hopper", 1}, {"ssm_ba_gates_hopper", 0}}, 2, METRALE_ERROR_ARGUMENT, "set twice"},
      {{{NULL, 1}, {NULL, 0}}, 1, METRALE_ERROR_ARGUMENT, "options.levers[0].name is NULL"},
  };
  for (size_t i = 0; i < COUNT(bad); ++i) {
    metrale_runtime_options options;
    metrale_runtime_options_init(&options);
    options.backend = METRALE_BACKEND_HOST;
    options.levers = bad[i].lever, options.lever_count = bad[i].count;
    metrale_runtime* none = NULL;
    const metrale_status status = metrale_runtime_open(&options, &none);
    CHECK(status == bad[i].status && none == NULL && contains(metrale_last_error(), bad[i].part),
          "bad lever %zu: %s: %s", i, metrale_status_name(status), metrale_last_error());
    metrale_runtime_close(none);
  }
  metrale_runtime_options options;
  metrale_runtime_options_init(&options);
  options.backend = METRALE_BACKEND_HOST, options.lever_count = 1; /* levers NULL */
  metrale_runtime* none = NULL;
  CHECK(metrale_runtime_open(&options, &none) == METRALE_ERROR_ARGUMENT && none == NULL &&
            contains(metrale_last_error(), "options.levers is NULL"),
        "levers NULL with a count: %s", metrale_last_error());
  options.lever_count = 0, options.target = "no-such-target";
  CHECK(metrale_runtime_open(&options, &none) == METRALE_ERROR_CONFIG && none == NULL &&
            contains(metrale_last_error(), "no-such-target"),
        "an unknown target: %s", metrale_last_error());
}

static void check_ops(metrale_runtime* rt) {
  metrale_runtime_info info;
  metrale_runtime_info_init(&info);
  CHECK(metrale_runtime_describe(rt, &info) == METRALE_OK, "%s", metrale_last_error());
  int seen = 0;
  for (size_t i = 0; i < info.op_count; ++i) {
    metrale_op_info op;
    metrale_op_info_init(&op);
    CHECK(metrale_op_get(rt, i, &op) == METRALE_OK, "%s", metrale_last_error());
    seen += strcmp(op.name, "ssm_ba_gates") == 0 || strcmp(op.name, "fp8_act_quant") == 0;
    CHECK(op.role_count >= 1 && op.arg_count >= 1 && op.summary[0] != '\0', "op %s: %zu roles, %zu arguments", op.name,
          op.role_count, op.arg_count);
  }
  CHECK(seen == 2, "the seed ops listed: %d", seen);

  /* By alias: the BA-gates op, its four roles (the parent first) and its twelve arguments. */
  metrale_op_info op;
  metrale_op_info_init(&op);
  CHECK(metrale_op_find(rt, "ba-gates", &op) == METRALE_OK, "%s", metrale_last_error());
  CHECK(strcmp(op.name, "ssm_ba_gates") == 0 && strcmp(op.aliases, "ba-gates") == 0 && op.role_count == 4 &&
            op.arg_count == 12,
        "ba-gates: %s (%s), %zu roles, %zu arguments", op.name, op.aliases, op.role_count, op.arg_count);
  const char* const roles[][4] = {{"parent", "ssm_ba_gates", "", ""},
                                  {"twin", "ssm_ba_gates_hopper", "", "ssm_ba_gates_hopper"},
                                  {"tensor_core", "ssm_ba_gates_mma", "mma", "ssm_ba_gates_tensor_core"}};
  for (size_t i = 0; i < 3; ++i) {
    metrale_role_info role;
    metrale_role_info_init(&role);
    CHECK(metrale_op_role(rt, "ssm_ba_gates", i, &role) == METRALE_OK, "%s", metrale_last_error());
    CHECK(strcmp(role.role, roles[i][0]) == 0 && strcmp(role.kernel, roles[i][1]) == 0 &&
              strcmp(role.aliases, roles[i][2]) == 0 && strcmp(role.lever, roles[i][3]) == 0 && role.shipped == 1 &&
              role.present == 1,
          "role %zu: %s %s (%s) lever %s shipped %d present %d", i, role.role, role.kernel, role.aliases, role.lever,
          role.shipped, role.present);
  }
  metrale_role_info role;
  metrale_role_info_init(&role);
  CHECK(metrale_op_role(rt, "fp8_act_quant", 0, &role) == METRALE_OK && strcmp(role.aliases, "shared") == 0 &&
            strcmp(role.kernel, "fp8_act_quant") == 0,
        "fp8's parent: %s (%s)", role.kernel, role.aliases);
  CHECK(metrale_op_role(rt, "fp8_act_quant", 2, &role) == METRALE_ERROR_ARGUMENT &&
            contains(metrale_last_error(), "2 roles"),
        "a role past fp8's two: %s", metrale_last_error());

  metrale_arg_info arg;
  metrale_arg_info_init(&arg);
  CHECK(metrale_op_arg_get(rt, "ssm_ba_gates", 0, &arg) == METRALE_OK, "%s", metrale_last_error());
  CHECK(strcmp(arg.name, "x") == 0 && arg.kind == METRALE_ARG_INPUT && strcmp(arg.dtype, "bf16") == 0 &&
            arg.alignment == 16 && strcmp(arg.dims, "m,k_stride") == 0 && arg.required == 1,
        "x: kind %d %s align %u dims %s required %d", arg.kind, arg.dtype, arg.alignment, arg.dims, arg.required);
  CHECK(metrale_op_arg_get(rt, "ssm_ba_gates", 4, &arg) == METRALE_OK && strcmp(arg.name, "gate_out") == 0 &&
            arg.kind == METRALE_ARG_OUTPUT && strcmp(arg.dtype, "fp32") == 0,
        "gate_out: %s kind %d %s", arg.name, arg.kind, arg.dtype);
  CHECK(metrale_op_arg_get(rt, "ssm_ba_gates", 8, &arg) == METRALE_OK && strcmp(arg.name, "k_stride") == 0 &&
            arg.kind == METRALE_ARG_SCALAR && arg.required == 0 && arg.fallback == 0 && arg.max == UINT32_MAX,
        "k_stride: %s kind %d required %d fallback %llu", arg.name, arg.kind, arg.required,
        (unsigned long long)arg.fallback);
  CHECK(metrale_op_arg_get(rt, "fp8_act_quant", 6, &arg) == METRALE_OK && strcmp(arg.name, "scale_layout") == 0 &&
            arg.min == 0 && arg.max == 1 && arg.required == 0,
        "scale_layout: %s [%llu, %llu]", arg.name, (unsigned long long)arg.min, (unsigned long long)arg.max);
  /* ABI 7: what a caller holding arrays needs to size them: zero_means, layout, multiple_of. */
  CHECK(strcmp(arg.zero_means, "") == 0 && strcmp(arg.layout_by, "") == 0 && arg.multiple_of == 0,
        "scale_layout's ABI 7 fields: '%s' '%s' %llu", arg.zero_means, arg.layout_by,
        (unsigned long long)arg.multiple_of);
  CHECK(metrale_op_arg_get(rt, "ssm_ba_gates", 9, &arg) == METRALE_OK && strcmp(arg.name, "gate_stride") == 0 &&
            strcmp(arg.zero_means, "n") == 0 && strcmp(arg.in_place_of, "") == 0,
        "gate_stride's zero_means: %s '%s'", arg.name, arg.zero_means);
  CHECK(metrale_op_arg_get(rt, "fp8_act_quant", 2, &arg) == METRALE_OK && strcmp(arg.name, "scales") == 0 &&
            strcmp(arg.layout_by, "scale_layout") == 0 && strcmp(arg.column_stride, "m_aligned") == 0,
        "scales' layout: %s '%s' '%s'", arg.name, arg.layout_by, arg.column_stride);
  CHECK(metrale_op_arg_get(rt, "fp8_act_quant", 7, &arg) == METRALE_OK && strcmp(arg.name, "m_aligned") == 0 &&
            arg.multiple_of == 4,
        "m_aligned's multiple_of: %s %llu", arg.name, (unsigned long long)arg.multiple_of);
  {
    /* A version-6 caller's struct (no ABI 7 fields) is filled up to its size and no byte past it. */
    unsigned char bytes[sizeof(metrale_arg_info) + 16];
    const size_t v6_size = offsetof(metrale_arg_info, zero_means);
    metrale_arg_info* old = (metrale_arg_info*)bytes;
    memset(bytes, 0xAB, sizeof(bytes));
    old->struct_size = v6_size;
    CHECK(metrale_op_arg_get(rt, "fp8_act_quant", 7, old) == METRALE_OK && strcmp(old->name, "m_aligned") == 0,
          "a version-6 info struct: %s", metrale_last_error());
    int untouched = 1;
    for (size_t i = v6_size; i < sizeof(bytes); ++i) {
      untouched = untouched && bytes[i] == 0xAB;
    }
    CHECK(untouched, "bytes past a version-6 struct were written");
    old->struct_size = offsetof(metrale_arg_info, doc);
    CHECK(metrale_op_arg_get(rt, "fp8_act_quant", 7, old) == METRALE_ERROR_VERSION,
          "a struct smaller than any version's is refused");
  }

  /* Refusals: an unknown op lists the known ones; an index past the end; NULL names. */
  op.role_count = 99;
  CHECK(metrale_op_find(rt, "silu", &op) == METRALE_ERROR_ARGUMENT && contains(metrale_last_error(), "'silu'") &&
            contains(metrale_last_error(), "fp8_act_quant"),
        "an unknown op: %s", metrale_last_error());
  CHECK(op.role_count == 99, "the info was written on a refusal");
  CHECK(metrale_op_get(rt, info.op_count, &op) == METRALE_ERROR_ARGUMENT, "an index past the ops");
  CHECK(metrale_op_arg_get(rt, "ssm_ba_gates", 12, &arg) == METRALE_ERROR_ARGUMENT &&
            contains(metrale_last_error(), "12 arguments"),
        "an argument past the end: %s", metrale_last_error());
  CHECK(metrale_op_find(rt, NULL, &op) == METRALE_ERROR_ARGUMENT && contains(metrale_last_error(), "op is NULL"),
        "a NULL op name: %s", metrale_last_error());
  CHECK(metrale_op_find(NULL, "ssm_ba_gates", &op) == METRALE_ERROR_ARGUMENT &&
            contains(metrale_last_error(), "runtime is NULL"),
        "a NULL runtime: %s", metrale_last_error());
  CHECK(metrale_runtime_describe(NULL, &info) == METRALE_ERROR_ARGUMENT &&
            contains(metrale_last_error(), "runtime is NULL"),
        "describe, a NULL runtime: %s", metrale_last_error());
}

/* A role's row in an explanation, or NULL. */
static const metrale_role_explanation* row(const metrale_op_explanation* why, const char* role) {
  for (uint32_t i = 0; i < why->role_count; ++i) {
    if (strcmp(why->roles[i].role, role) == 0) return &why->roles[i];
  }
  return NULL;
}

static void check_explain_ba_gates(metrale_runtime* rt) {
  const metrale_op_arg shape[] = {{"m", 5}, {"n", 8}, {"k", 256}};
  metrale_op_explanation why;
  metrale_op_explanation_init(&why);
  CHECK(metrale_op_explain(rt, "ssm_ba_gates", shape, COUNT(shape), 1, &why) == METRALE_OK, "%s", metrale_last_error());
  CHECK(strcmp(why.op, "ssm_ba_gates") == 0 && strcmp(why.role, "parent") == 0 &&
            strcmp(why.kernel, "ssm_ba_gates") == 0 && why.sm_count == 132 && why.role_count == 3,
        "explain: %s runs %s (%s) at %u SMs, %u roles", why.op, why.kernel, why.role, why.sm_count, why.role_count);
  /* The guard order: the tensor-core kernel's first, then the decode kernel's, then the twin's. */
  CHECK(why.role_count == 3 && strcmp(why.roles[0].role, "tensor_core") == 0 &&
            strcmp(why.roles[1].role, "decode") == 0 && strcmp(why.roles[2].role, "twin") == 0,
        "rows: %s, %s, %s", why.roles[0].role, why.roles[1].role, why.roles[2].role);
  /* K = 256 is 32 vectors: too short to split over a cluster, at any M. */
  const metrale_role_explanation* decode = row(&why, "decode");
  CHECK(decode != NULL && decode->runs == 0 && decode->has_min_m == 0 && contains(decode->min_reason, "no K split"),
        "decode: never at K = 256 (%s)", decode == NULL ? "no row" : TEXT(decode->min_reason));
  const metrale_role_explanation* twin = row(&why, "twin");
  const metrale_role_explanation* tc = row(&why, "tensor_core");
  if (twin == NULL || tc == NULL) return;
  /* M = 5 is below the twin's token floor: two tokens (CTAs) per SM. */
  CHECK(twin->runs == 0 && contains(twin->reject, "too few tokens") && twin->has_min_m == 1 &&
            twin->min_m == 2 * why.sm_count && twin->min_reason == NULL,
        "twin: runs %d (%s), min_m %u at %u SMs", twin->runs, TEXT(twin->reject), twin->min_m, why.sm_count);
  CHECK(twin->present == 1 && twin->requested == 1 && strcmp(twin->lever, "ssm_ba_gates_hopper") == 0 &&
            contains(twin->lever_origin, "file"),
        "twin's lever: %s requested %d from %s", twin->lever, twin->requested, twin->lever_origin);
  /* Tiles of 128 tokens; K = 256 is 4 chunks of 64, so a tile splits over at most 4 CTAs and a
     twelfth of the SMs takes ceil(ceil(SMs / 12) / 4) tiles. */
  CHECK(tc->runs == 0 && contains(tc->reject, "too few tokens") && tc->requested == 1 && tc->present == 1 &&
            tc->has_min_m == 1 && tc->min_m == 128 * (((why.sm_count + 11) / 12 + 3) / 4),
        "tensor core: runs %d (%s), min_m %u", tc->runs, TEXT(tc->reject), tc->min_m);
  int tile = 0;
  for (uint32_t i = 0; i < tc->detail_count; ++i) {
    tile += strcmp(tc->details[i].name, "tokens_per_tile") == 0 && tc->details[i].value == 128;
  }
  CHECK(tile == 1, "the tensor-core row does not say its 128-token tile (%u details)", tc->detail_count);

  /* At the twin's floor the twin runs; without M, only the floors are answered. */
  const metrale_op_arg at_floor[] = {{"m", 2 * why.sm_count}, {"n", 8}, {"k", 256}};
  CHECK(metrale_op_explain(rt, "ba-gates", at_floor, COUNT(at_floor), 1, &why) == METRALE_OK, "%s",
        metrale_last_error());
  CHECK(strcmp(why.role, "twin") == 0 && strcmp(why.kernel, "ssm_ba_gates_hopper") == 0, "at M = %u: %s",
        2 * why.sm_count, why.kernel);
  CHECK(metrale_op_explain(rt, "ssm_ba_gates", shape + 1, COUNT(shape) - 1, 0, &why) == METRALE_OK, "%s",
        metrale_last_error());
  CHECK(strcmp(why.kernel, "") == 0 && why.role_count == 3 && why.roles[2].has_min_m == 1 &&
            why.roles[2].min_m == 2 * why.sm_count,
        "without M: kernel '%s', twin min_m %u", why.kernel, why.roles[2].min_m);
}

static void check_explain_fp8(metrale_runtime* rt, metrale_runtime* twin_off) {
  /* The twin packs 8 groups of 128 into a CTA and needs 2 CTAs per SM: at K = 5120 (40 groups,
     5 CTAs a row) the smallest M is ceil(2 x SMs / 5). */
  enum { K5120_CTAS_PER_ROW = 5 };
  metrale_op_explanation why;
  metrale_op_explanation_init(&why);
  const metrale_op_arg shape[] = {{"m", 8}, {"k", 5120}};
  CHECK(metrale_op_explain(rt, "fp8-quant", shape, COUNT(shape), 1, &why) == METRALE_OK, "%s", metrale_last_error());
  const metrale_role_explanation* twin = row(&why, "twin");
  const uint32_t min_m = (2 * why.sm_count + K5120_CTAS_PER_ROW - 1) / K5120_CTAS_PER_ROW;
  CHECK(twin != NULL && strcmp(why.role, "parent") == 0 && strcmp(why.kernel, "fp8_act_quant") == 0 &&
            twin->runs == 0 && contains(twin->reject, "too few CTAs") && twin->has_min_m == 1 && twin->min_m == min_m &&
            min_m == 53,
        "fp8 at M = 8: %s, twin min_m %u (want %u)", why.kernel, twin ? twin->min_m : 0, min_m);
  const metrale_op_arg at_floor[] = {{"m", min_m}, {"k", 5120}};
  CHECK(metrale_op_explain(rt, "fp8_act_quant", at_floor, COUNT(at_floor), 1, &why) == METRALE_OK, "%s",
        metrale_last_error());
  CHECK(strcmp(why.kernel, "fp8_act_quant_hopper") == 0 && why.roles[0].runs == 1 && why.roles[0].reject == NULL,
        "fp8 at M = %u: %s", min_m, why.kernel);
  /* Its lever set off in the options: never, and the row says where the lever came from. */
  CHECK(metrale_op_explain(twin_off, "fp8_act_quant", at_floor, COUNT(at_floor), 1, &why) == METRALE_OK, "%s",
        metrale_last_error());
  CHECK(strcmp(why.kernel, "fp8_act_quant") == 0 && why.roles[0].requested == 0 && why.roles[0].has_min_m == 0 &&
            contains(why.roles[0].min_reason, "not requested") && contains(why.roles[0].lever_origin, "options"),
        "fp8, lever off: %s, min_reason %s, lever from %s", why.kernel, TEXT(why.roles[0].min_reason),
        why.roles[0].lever_origin);

  /* Refusals: a shape names the op's scalars inside their ranges. */
  why.role_count = 99;
  const metrale_op_arg unknown[] = {{"tokens", 8}};
  CHECK(metrale_op_explain(rt, "fp8_act_quant", unknown, 1, 1, &why) == METRALE_ERROR_ARGUMENT &&
            contains(metrale_last_error(), "'tokens'"),
        "an unknown shape argument: %s", metrale_last_error());
  const metrale_op_arg layout[] = {{"m", 8}, {"k", 5120}, {"pow2_scales", 3}};
  CHECK(metrale_op_explain(rt, "fp8_act_quant", layout, COUNT(layout), 1, &why) == METRALE_ERROR_ARGUMENT &&
            contains(metrale_last_error(), "pow2_scales=3"),
        "an out-of-range scalar: %s", metrale_last_error());
  CHECK(metrale_op_explain(rt, "nope", shape, COUNT(shape), 1, &why) == METRALE_ERROR_ARGUMENT, "an unknown op");
  CHECK(metrale_op_explain(NULL, "fp8_act_quant", shape, COUNT(shape), 1, &why) == METRALE_ERROR_ARGUMENT &&
            contains(metrale_last_error(), "runtime is NULL"),
        "a NULL runtime: %s", metrale_last_error());
  CHECK(why.role_count == 99, "the explanation was written on a refusal");
}

int main(void) {
  check_levers();
  const metrale_lever_override fp8_on[] = {{"fp8_act_quant_hopper", 1}};
  const metrale_lever_override fp8_off[] = {{"fp8_act_quant_hopper", 0}};
  metrale_runtime* rt = open_host(fp8_on, COUNT(fp8_on));
  metrale_runtime* twin_off = open_host(fp8_off, COUNT(fp8_off));
  if (rt != NULL && twin_off != NULL) {
    check_ops(rt);
    check_explain_ba_gates(rt);
    check_explain_fp8(rt, twin_off);
  }
  metrale_runtime_close(rt);
  metrale_runtime_close(twin_off);
  if (failures != 0) {
    fprintf(stderr, "%d checks failed\n", failures);
    return 1;
  }
  printf("all C ABI catalogue checks passed\n");
  return 0;
}
