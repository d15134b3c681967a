/* capi_tuning.c: tuning tables through metrale.h (ABI 8) on the host backend: metrale_runtime_tune
 * writes a table for FP8 (by its alias) whose text has the format's header and the op's row; a
 * second runtime given it (options.tuning_table) says it uses one row
 * (metrale_runtime_tuning_status), and explain names the table's row as the twin's threshold
 * origin (threshold_origins); a version-7 options struct (without tuning_table) still opens, with
 * no table, and a version-7 explanation struct is filled up to its size and no byte past it.
 * Refusals: a table that does not exist, one edited by hand, an unwritable out_path (nothing left
 * behind), an unknown op, a NULL runtime. Exit 0 when every check holds. */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capi_check.h"
#include "metrale/metrale.h"

#define TABLE_HEADER "# metrale-jit tuning table"

static const metrale_lever_override kLevers[] = {{"fp8_act_quant_hopper", 1}};

/* The options of every runtime here: host backend, 8 SMs, no verification, the FP8 twin asked for. */
static metrale_runtime_options host_options(void) {
  metrale_runtime_options options;
  metrale_runtime_options_init(&options);
  options.backend = METRALE_BACKEND_HOST;
  options.target = "hopper";
  options.host_sm_count = 8;
  options.verify = 0;
  options.levers = kLevers, options.lever_count = COUNT(kLevers);
  options.tuning_table = ""; /* none, whatever METRALE_TUNING_TABLE says */
  return options;
}

static metrale_runtime* open_with(const metrale_runtime_options* options) {
  metrale_runtime* rt = NULL;
  const metrale_status status = metrale_runtime_open(options, &rt);
  CHECK(status == METRALE_OK && rt != NULL, "open: %s: %s", metrale_status_name(status), metrale_last_error());
  return rt;
}

/* A whole file as a NUL-terminated string (NULL when it cannot be read); free it. */
static char* read_file(const char* path) {
  FILE* file = fopen(path, "rb");
  if (file == NULL) return NULL;
  size_t size = 0, capacity = 4096;
  char* text = malloc(capacity);
  size_t got = 0;
  while (text != NULL && (got = fread(text + size, 1, capacity - size - 1, file)) > 0) {
    size += got;
    if (capacity - size - 1 == 0) {
      char* grown = realloc(text, capacity *= 2);
      if (grown == NULL) free(text);
      text = grown;
    }
  }
  fclose(file);
  if (text != NULL) text[size] = '\0';
  return text;
}

static int write_file(const char* path, const char* text) {
  FILE* file = fopen(path, "wb");
  if (file == NULL) return 0;
  const int ok = fputs(text, file) >= 0;
  return fclose(file) == 0 && ok;
}

/* The number of entries in a folder, "." and ".." aside (-1 when it cannot be read). */
static int entries(const char* dir) {
  DIR* d = opendir(dir);
  if (d == NULL) return -1;
  int count = 0;
  const struct dirent* entry;
  while ((entry = readdir(d)) != NULL) {
    count += strcmp(entry->d_name, ".") != 0 && strcmp(entry->d_name, "..") != 0;
  }
  closedir(d);
  return count;
}

/* The row of `role` in an explanation (its index), or -1. */
static int role_index(const metrale_op_explanation* why, const char* role) {
  for (uint32_t i = 0; i < why->role_count && i < METRALE_MAX_EXPLAIN_ROLES; ++i) {
    if (strcmp(why->roles[i].role, role) == 0) return (int)i;
  }
  return -1;
}

static const metrale_op_arg kShape[] = {{"k", 1024}};

/* Tunes FP8 on a fresh runtime into `path`; returns whether it succeeded and the file is the table. */
static int tune_fp8(const char* path) {
  const metrale_runtime_options options = host_options();
  metrale_runtime* rt = open_with(&options);
  if (rt == NULL) return 0;
  CHECK(strcmp(metrale_runtime_tuning_status(rt), "") == 0, "no table given: status '%s'",
        metrale_runtime_tuning_status(rt));
  const uint32_t m[] = {1, 2, 4};
  const uint32_t k[] = {1024};
  const metrale_status status = metrale_runtime_tune(rt, "fp8-quant", m, COUNT(m), NULL, 0, k, COUNT(k), 2, path);
  CHECK(status == METRALE_OK, "tune: %s: %s", metrale_status_name(status), metrale_last_error());
  char* text = read_file(path);
  CHECK(text != NULL, "tune wrote no %s", path);
  int ok = status == METRALE_OK && text != NULL;
  if (text != NULL) {
    CHECK(strncmp(text, TABLE_HEADER, strlen(TABLE_HEADER)) == 0, "the table's first line: %.80s", text);
    CHECK(contains(text, "op = \"fp8_act_quant\"") && contains(text, "role = \"twin\"") && contains(text, "k = 1024") &&
              contains(text, "repeats = 2"),
          "the table has no FP8 twin row at k 1024 with 2 repeats:\n%s", text);
    CHECK(!contains(text, "ssm_ba_gates"), "only the op asked for was tuned:\n%s", text);
    ok = ok && strncmp(text, TABLE_HEADER, strlen(TABLE_HEADER)) == 0 && contains(text, "op = \"fp8_act_quant\"");
    free(text);
  }

  /* Refusals: nothing is written, the last error names the cause. */
  CHECK(metrale_runtime_tune(rt, "fp8-quant,no_such_op", m, COUNT(m), NULL, 0, k, COUNT(k), 1, path) ==
                METRALE_ERROR_ARGUMENT &&
            contains(metrale_last_error(), "no_such_op"),
        "an unknown op: %s", metrale_last_error());
  CHECK(metrale_runtime_tune(rt, "fp8-quant", NULL, 3, NULL, 0, k, COUNT(k), 1, path) == METRALE_ERROR_ARGUMENT &&
            contains(metrale_last_error(), "m is NULL"),
        "m NULL with a count: %s", metrale_last_error());
  const uint32_t zero[] = {0};
  CHECK(metrale_runtime_tune(rt, "fp8-quant", zero, 1, NULL, 0, k, COUNT(k), 1, path) == METRALE_ERROR_ARGUMENT &&
            contains(metrale_last_error(), "at least 1"),
        "M = 0: %s", metrale_last_error());
  CHECK(metrale_runtime_tune(rt, "fp8-quant", m, COUNT(m), NULL, 0, k, COUNT(k), 1, NULL) == METRALE_ERROR_ARGUMENT &&
            contains(metrale_last_error(), "out_path is NULL"),
        "out_path NULL: %s", metrale_last_error());
  CHECK(metrale_runtime_tune(NULL, "fp8-quant", m, COUNT(m), NULL, 0, k, COUNT(k), 1, path) == METRALE_ERROR_ARGUMENT &&
            contains(metrale_last_error(), "runtime is NULL"),
        "a NULL runtime: %s", metrale_last_error());
  CHECK(metrale_runtime_tuning_status(NULL) == NULL, "the status of a NULL runtime is not NULL");
  metrale_runtime_close(rt);
  return ok;
}

/* A runtime given the table: one row in use, explain names its row for the twin. */
static void check_table_in_use(const char* path) {
  metrale_runtime_options options = host_options();
  options.tuning_table = path;
  metrale_runtime* rt = open_with(&options);
  if (rt == NULL) return;
  const char* status = metrale_runtime_tuning_status(rt);
  CHECK(contains(status, "1 row in use") && contains(status, path), "tuning status: '%s'", TEXT(status));

  metrale_op_explanation why;
  metrale_op_explanation_init(&why);
  CHECK(metrale_op_explain(rt, "fp8_act_quant", kShape, COUNT(kShape), 0, &why) == METRALE_OK, "explain: %s",
        metrale_last_error());
  const int twin = role_index(&why, "twin");
  CHECK(twin >= 0, "explain has no twin row (%u roles)", why.role_count);
  if (twin >= 0) {
    const char* origin = why.threshold_origins[twin];
    CHECK(contains(origin, "tuning table") && contains(origin, path) && contains(origin, "row 1"),
          "the twin's threshold origin: '%s'", TEXT(origin));
  }
  for (uint32_t i = why.role_count; i < METRALE_MAX_EXPLAIN_ROLES; ++i) {
    CHECK(why.threshold_origins[i] == NULL, "threshold_origins[%u] past the roles is set", i);
  }

  /* A version-7 explanation struct (no threshold_origins) is filled up to its size, no byte past it. */
  unsigned char bytes[sizeof(metrale_op_explanation) + 16];
  const size_t v7_size = offsetof(metrale_op_explanation, threshold_origins);
  metrale_op_explanation* old = (metrale_op_explanation*)(void*)bytes;
  memset(bytes, 0xAB, sizeof(bytes));
  old->struct_size = v7_size;
  CHECK(metrale_op_explain(rt, "fp8_act_quant", kShape, COUNT(kShape), 0, old) == METRALE_OK &&
            strcmp(old->op, "fp8_act_quant") == 0 && role_index(old, "twin") >= 0,
        "a version-7 explanation struct: %s", metrale_last_error());
  int untouched = 1;
  for (size_t i = v7_size; i < sizeof(bytes); ++i) {
    untouched = untouched && bytes[i] == 0xAB;
  }
  CHECK(untouched, "bytes past a version-7 explanation struct were written");
  metrale_runtime_close(rt);

  /* The same runtime without the table: the twin's threshold is the prediction. */
  const metrale_runtime_options plain_options = host_options();
  metrale_runtime* plain = open_with(&plain_options);
  if (plain == NULL) return;
  metrale_op_explanation_init(&why);
  CHECK(metrale_op_explain(plain, "fp8_act_quant", kShape, COUNT(kShape), 0, &why) == METRALE_OK, "explain: %s",
        metrale_last_error());
  const int plain_twin = role_index(&why, "twin");
  CHECK(plain_twin >= 0 && strcmp(TEXT(why.threshold_origins[plain_twin]), "prediction") == 0,
        "without a table the twin's threshold origin: '%s'",
        plain_twin >= 0 ? TEXT(why.threshold_origins[plain_twin]) : "(no twin)");
  metrale_runtime_close(plain);
}

/* A version-7 options struct (ending before tuning_table) opens, and reads no table. */
static void check_version7_options(const char* path) {
  /* The field past a version-7 struct names the table: the library must not read it. */
  metrale_runtime_options options = host_options();
  options.tuning_table = path;
  options.struct_size = offsetof(metrale_runtime_options, tuning_table);
  metrale_runtime* rt = open_with(&options);
  if (rt == NULL) return;
  const char* status = metrale_runtime_tuning_status(rt);
  CHECK(status != NULL && strcmp(status, "") == 0, "a version-7 struct's tuning status: '%s'", TEXT(status));
  metrale_runtime_close(rt);
}

/* Tables that cannot be used, and out_paths that cannot be written. */
static void check_refusals(const char* dir, const char* path) {
  char absent[512], edited[512], no_folder[512];
  snprintf(absent, sizeof(absent), "%s/absent.toml", dir);
  snprintf(edited, sizeof(edited), "%s/edited.toml", dir);
  snprintf(no_folder, sizeof(no_folder), "%s/no-such-folder/t.toml", dir);

  metrale_runtime_options options = host_options();
  options.tuning_table = absent;
  metrale_runtime* none = NULL;
  metrale_status status = metrale_runtime_open(&options, &none);
  CHECK(status == METRALE_ERROR_CONFIG && none == NULL && contains(metrale_last_error(), "absent.toml"),
        "a table that does not exist: %s: %s", metrale_status_name(status), metrale_last_error());
  metrale_runtime_close(none);

  /* One timing made larger by hand: the digest no longer matches. */
  char* text = read_file(path);
  CHECK(text != NULL, "cannot read %s", path);
  if (text != NULL) {
    char* timing = strstr(text, "role_us = ");
    CHECK(timing != NULL, "no role_us in the table");
    if (timing != NULL) {
      timing += strlen("role_us = ");
      *timing = *timing == '9' ? '8' : '9'; /* the first digit changed */
      CHECK(write_file(edited, text), "cannot write %s", edited);
      options.tuning_table = edited;
      none = NULL;
      status = metrale_runtime_open(&options, &none);
      CHECK(status == METRALE_ERROR_CONFIG && none == NULL && contains(metrale_last_error(), "edited"),
            "an edited table: %s: %s", metrale_status_name(status), metrale_last_error());
      metrale_runtime_close(none);
    }
    free(text);
  }

  /* An out_path in a folder that does not exist: refused before any timing, nothing written. */
  const metrale_runtime_options plain = host_options();
  metrale_runtime* rt = open_with(&plain);
  if (rt == NULL) return;
  const int before = entries(dir);
  const uint32_t k[] = {1024};
  status = metrale_runtime_tune(rt, "fp8_act_quant", NULL, 0, NULL, 0, k, COUNT(k), 1, no_folder);
  CHECK(status == METRALE_ERROR_CONFIG && contains(metrale_last_error(), "no-such-folder"),
        "an out_path in no folder: %s: %s", metrale_status_name(status), metrale_last_error());
  /* An out_path that is a folder: the rename fails, the temporary file beside it is removed. */
  char folder[512];
  snprintf(folder, sizeof(folder), "%s/a-folder", dir);
  CHECK(mkdir(folder, 0700) == 0, "cannot make %s", folder);
  const int with_folder = entries(dir);
  const uint32_t m[] = {1};
  status = metrale_runtime_tune(rt, "fp8_act_quant", m, COUNT(m), NULL, 0, k, COUNT(k), 1, folder);
  CHECK(status == METRALE_ERROR_CONFIG && contains(metrale_last_error(), "cannot replace"),
        "an out_path that is a folder: %s: %s", metrale_status_name(status), metrale_last_error());
  CHECK(before >= 0 && with_folder == before + 1 && entries(dir) == with_folder,
        "a refused tune left files in %s (%d entries, %d before)", dir, entries(dir), with_folder);
  metrale_runtime_close(rt);
}

static void remove_all(const char* dir) {
  DIR* d = opendir(dir);
  if (d == NULL) return;
  const struct dirent* entry;
  char path[512];
  while ((entry = readdir(d)) != NULL) {
    if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0) continue;
    snprintf(path, sizeof(path), "%s/%s", dir, entry->d_name);
    remove(path);
  }
  closedir(d);
  rmdir(dir);
}

int main(void) {
  unsetenv("METRALE_TUNING_TABLE"); /* the tables here are the options' alone */
  char dir[] = "/tmp/metrale-capi-tuning-XXXXXX";
  if (mkdtemp(dir) == NULL) {
    perror("mkdtemp");
    return 1;
  }
  char path[512];
  snprintf(path, sizeof(path), "%s/fp8.toml", dir);
  if (tune_fp8(path)) {
    check_table_in_use(path);
    check_version7_options(path);
    check_refusals(dir, path);
  }
  remove_all(dir);
  if (failures != 0) {
    fprintf(stderr, "%d C ABI tuning check(s) failed\n", failures);
    return 1;
  }
  printf("all C ABI tuning checks passed\n");
  return 0;
}
