/* capi_check.h: the C tests' one check: a failed condition prints where, what and why, and is
 * counted in `failures` (each test exits non-zero when it is not 0); their seeded inputs; and
 * the small helpers of the op tests (bf16 bits, the nearest e4m3 code, aligned buffers, addresses
 * as op arguments). */
#ifndef METRALE_TESTS_CAPI_CHECK_H
#define METRALE_TESTS_CAPI_CHECK_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* A buffer's address as an op argument's value (host addresses on the host backend). */
#define PTR(p) ((uint64_t)(uintptr_t)(p))
/* The number of elements of an array (of named op arguments). */
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
/* A C string that may be NULL, for messages. */
#define TEXT(s) ((s) != NULL ? (s) : "(null)")

static inline uint16_t bf16_bits(float value) {
  uint32_t bits;
  memcpy(&bits, &value, sizeof bits);
  return (uint16_t)(bits >> 16);
}
static inline float bf16_value(uint16_t bits) {
  uint32_t wide = (uint32_t)bits << 16;
  float value;
  memcpy(&value, &wide, sizeof value);
  return value;
}
/* 256-byte aligned, as device allocations are (posix_memalign: the includer defines
 * _POSIX_C_SOURCE). */
static inline void* aligned(size_t bytes) {
  void* p = NULL;
  return posix_memalign(&p, 256, bytes) == 0 ? p : NULL;
}
/* The nearest e4m3fn code to v (ties to the even code), saturating at +-448. */
static inline uint8_t e4m3_nearest(float v) {
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

/* Whether a C string holds `part` (a NULL string holds nothing). */
static inline int contains(const char* text, const char* part) { return text != NULL && strstr(text, part) != NULL; }

#endif
