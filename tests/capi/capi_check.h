/* capi_check.h: the C tests' one check: a failed condition prints where, what and why, and is
 * counted in `failures` (each test exits non-zero when it is not 0); and their seeded inputs. */
#ifndef METRALE_TESTS_CAPI_CHECK_H
#define METRALE_TESTS_CAPI_CHECK_H

#include <stdint.h>
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

/* xorshift64*: seeded, so a failure reproduces; never all zeros. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static inline float uniform(float lo, float hi) {
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return lo + (hi - lo) * (float)((rng_state * 0x2545F4914F6CDD1DULL) >> 40) / (float)(1 << 24);
}

#endif
