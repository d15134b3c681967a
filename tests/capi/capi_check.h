/* capi_check.h: the C tests' one check: a failed condition prints where, what and why, and is
 * counted in `failures` (each test exits non-zero when it is not 0). */
#ifndef METRALE_TESTS_CAPI_CHECK_H
#define METRALE_TESTS_CAPI_CHECK_H

#include <stdio.h>

static int failures = 0;

#define CHECK(cond, ...)                                         \
  do {                                                           \
    if (!(cond)) {                                               \
      fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                              \
      fprintf(stderr, "\n");                                     \
      ++failures;                                                \
    }                                                            \
  } while (0)

#endif
