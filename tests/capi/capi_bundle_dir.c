/* capi_bundle_dir.c: metrale_runtime_options.bundle_dirs from C. Builds a hopper bundle with the
 * CLI (NVRTC reachable there), then, in this process where NVRTC is hidden (CTest sets
 * METRALE_NVRTC_LIBRARY to a path that does not exist) and with an empty disk cache each time:
 * - options naming the bundle (after a directory that does not exist, ':'-separated) compile a
 *   hopper kernel for sm_90: it can only have come from the bundle;
 * - without the option, or with a version-1 struct_size that ends before the field, the same
 *   compile fails and says no NVRTC was found;
 * - a struct_size below version 1's is refused as a version error;
 * - signed with `metrale-jit bundle sign` by a key pair from `metrale-jit keygen`, the bundle serves
 *   under its signer's options.bundle_pubkey; under another key, or unsigned with a key given, it
 *   is refused (the compile then fails for want of NVRTC); a bundle_pubkey file that is no key
 *   fails the open with METRALE_ERROR_CONFIG naming it.
 * Each case runs in its own child: the process-wide memory cache would otherwise carry one
 * case's result into the next. Usage: capi_bundle_dir <path to metrale-jit>. Exit 0 when every
 * check holds. */
#define _POSIX_C_SOURCE 200809L

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capi_check.h"
#include "metrale/metrale.h"

enum expect { EXPECT_FROM_BUNDLE, EXPECT_NO_NVRTC };

/* Opens a runtime with `bundle_dirs` (NULL: unset) and `struct_size`, compiles the hopper FP8
 * kernel for sm_90 and checks the outcome. Returns the number of failed checks. */
static int compile_case(const char* cache_dir, const char* bundle_dirs, const char* pubkey, size_t struct_size,
                        enum expect expect) {
  metrale_runtime_options options;
  metrale_runtime_options_init(&options);
  options.target = "hopper";
  options.cache_dir = cache_dir;
  options.bundle_dirs = bundle_dirs;
  options.bundle_pubkey = pubkey;
  options.struct_size = struct_size;
  metrale_runtime* rt = NULL;
  if (metrale_runtime_open(&options, &rt) != METRALE_OK) {
    fprintf(stderr, "open: %s\n", metrale_last_error());
    return 1;
  }
  metrale_variant variant;
  metrale_variant_init(&variant);
  variant.kernel = "fp8_act_quant";
  variant.source = "fp8_act_quant.cuh";
  variant.name_expression = "metrale::kernels::per_token_group_quant_fp8<16, 1>";
  variant.lanes = 16;
  variant.groups = 1;
  uint32_t id = 0;
  CHECK(metrale_registry_declare(rt, &variant, &id) == METRALE_OK, "declare: %s", metrale_last_error());
  metrale_build_result result;
  metrale_build_result_init(&result);
  CHECK(metrale_registry_compile(rt, id, "sm_90", &result) == METRALE_OK, "compile: %s", metrale_last_error());
  if (expect == EXPECT_FROM_BUNDLE) {
    CHECK(result.ok == 1, "the bundle serves the kernel with NVRTC hidden: %s", result.reason ? result.reason : "");
  } else {
    CHECK(result.ok == 0, "without the bundle nothing can compile the kernel");
    CHECK(result.log != NULL && strstr(result.log, "no NVRTC was found") != NULL, "the log says why: %s",
          result.log ? result.log : "(null)");
  }
  metrale_runtime_close(rt);
  return failures;
}

/* Runs compile_case in a child; returns its failure count (1 when it died). */
static int in_child(const char* cache_dir, const char* bundle_dirs, const char* pubkey, size_t struct_size,
                    enum expect expect) {
  fflush(stderr);
  const pid_t child = fork();
  if (child == 0) {
    failures = 0; /* the parent's count so far is not this case's */
    _exit(compile_case(cache_dir, bundle_dirs, pubkey, struct_size, expect) == 0 ? 0 : 1);
  }
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) != child) {
    return 1;
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: capi_bundle_dir <path to metrale-jit>\n");
    return 2;
  }
  char work[] = "/tmp/metrale-capi-bundle-XXXXXX";
  if (mkdtemp(work) == NULL) {
    perror("mkdtemp");
    return 1;
  }
  unsetenv("METRALE_BUNDLE_DIR");
  char command[4096];
  snprintf(command, sizeof command,
           "METRALE_NVRTC_LIBRARY= METRALE_CACHE_DIR='%s/build-cache' '%s' build --target hopper --bundle '%s/bundle'"
           " >/dev/null",
           work, argv[1], work);
  CHECK(system(command) == 0, "metrale-jit build --bundle: %s", command);

  char bundle_list[1024];
  snprintf(bundle_list, sizeof bundle_list, "%s/not-a-bundle:%s/bundle", work, work);
  char caches[6][1024];
  for (int i = 0; i < 6; ++i) {
    snprintf(caches[i], sizeof caches[i], "%s/empty-cache-%d", work, i);
  }
  const size_t full = sizeof(metrale_runtime_options);
  /* ABI 2 starts metrale_runtime_options afresh (the levers by name replaced version 1's fields):
     its first version holds bundle_dirs, so a struct_size without it is refused. */
  const size_t version1 = offsetof(metrale_runtime_options, bundle_dirs);
  CHECK(in_child(caches[0], bundle_list, NULL, full, EXPECT_FROM_BUNDLE) == 0, "bundle_dirs names the bundle");
  CHECK(in_child(caches[1], NULL, NULL, full, EXPECT_NO_NVRTC) == 0, "no bundle_dirs");

  /* Signed: served under its signer's key only; unsigned under a key: refused. */
  snprintf(command, sizeof command,
           "'%s' keygen --out '%s/signer' >/dev/null && '%s' keygen --out '%s/other' >/dev/null && "
           "'%s' bundle sign '%s/bundle' --key '%s/signer.key' >/dev/null",
           argv[1], work, argv[1], work, argv[1], work, work);
  CHECK(system(command) == 0, "metrale-jit keygen and bundle sign: %s", command);
  char signer[1024];
  char other[1024];
  char garbage[1024];
  char signature[1024];
  snprintf(signer, sizeof signer, "%s/signer.pub", work);
  snprintf(other, sizeof other, "%s/other.pub", work);
  snprintf(garbage, sizeof garbage, "%s/signer.key", work); /* a secret key is no public key */
  snprintf(signature, sizeof signature, "%s/bundle/bundle.sig", work);
  CHECK(in_child(caches[2], bundle_list, signer, full, EXPECT_FROM_BUNDLE) == 0, "signed, under its signer's key");
  CHECK(in_child(caches[3], bundle_list, other, full, EXPECT_NO_NVRTC) == 0, "signed, under another key: refused");
  CHECK(remove(signature) == 0, "remove %s", signature);
  CHECK(in_child(caches[4], bundle_list, signer, full, EXPECT_NO_NVRTC) == 0, "unsigned under a key: refused");
  {
    metrale_runtime_options keyed;
    metrale_runtime_options_init(&keyed);
    keyed.target = "hopper";
    keyed.cache_dir = caches[5];
    keyed.bundle_pubkey = garbage;
    metrale_runtime* none = NULL;
    CHECK(metrale_runtime_open(&keyed, &none) == METRALE_ERROR_CONFIG, "a bundle_pubkey that is no key");
    CHECK(none == NULL, "and nothing is opened");
    CHECK(strstr(metrale_last_error(), garbage) != NULL, "the error names the file: %s", metrale_last_error());
  }

  metrale_runtime_options too_small;
  metrale_runtime_options_init(&too_small);
  too_small.struct_size = version1;
  metrale_runtime* rt = NULL;
  CHECK(metrale_runtime_open(&too_small, &rt) == METRALE_ERROR_VERSION,
        "a struct_size without bundle_dirs (ABI 1's) is refused");
  CHECK(rt == NULL, "and nothing is opened");
  CHECK(strstr(metrale_last_error(), "struct_size") != NULL, "the error names struct_size: %s", metrale_last_error());

  snprintf(command, sizeof command, "rm -rf '%s'", work);
  if (system(command) != 0) {
    fprintf(stderr, "could not remove %s\n", work);
  }
  if (failures == 0) {
    printf("all C ABI bundle checks passed\n");
  }
  return failures == 0 ? 0 : 1;
}
