/* capi_host_jit.c: an engine's own kernel through the C ABI on the host backend. It has no
 * built-in host instantiation, so libmetrale.so compiles it at run time with the system compiler
 * (src/host/host_jit.hpp) and loads the object, which reaches the library's host prelude (barriers,
 * warp shuffles, thread coordinates) through the table the loader hands it, never through symbols
 * libmetrale.so would have to export. The kernel is run on random input against a reference
 * computed here; run twice, the second time from the compiled object in the cache. */
#define _POSIX_C_SOURCE 200112L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capi_check.h"
#include "metrale/metrale.h"

enum { BLOCK = 64, BLOCKS = 5, WARP = 32 };

/* Each block mirrors its chunk through shared memory (a barrier between write and read), then
 * adds the warp's sum of the mirrored values (xor shuffles): y = s * x[mirror] + warp sum. */
static const char* const kSource =
    "template <int B>\n"
    "__global__ void jit_mirror(const float* x, float* y, float s, int blocks) {\n"
    "  __shared__ float tile[B];\n"
    "  const int t = static_cast<int>(threadIdx.x);\n"
    "  const int base = static_cast<int>(blockIdx.x * blockDim.x);\n"
    "  if (static_cast<int>(blockIdx.x) >= blocks) return;\n"
    "  tile[t] = x[base + t];\n"
    "  __syncthreads();\n"
    "  const float v = tile[B - 1 - t];\n"
    "  float sum = v;\n"
    "  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);\n"
    "  y[base + t] = s * v + sum;\n"
    "}\n";

/* Builds the variant, runs it once on fresh random integers (exact in float, so any summation
 * order gives the reference's value) and checks every output. Returns the variant's handle. */
static uint64_t build_and_run(const metrale_runtime_options* options) {
  metrale_runtime* rt = NULL;
  if (metrale_runtime_open(options, &rt) != METRALE_OK) {
    fprintf(stderr, "open: %s\n", metrale_last_error());
    ++failures;
    return 0;
  }
  CHECK(metrale_registry_add_source(rt, "jit_mirror.cuh", kSource) == METRALE_OK, "%s", metrale_last_error());
  metrale_variant variant;
  metrale_variant_init(&variant);
  /* {block} is filled in by declare (BLOCK: 64), as for the library's own kernels. */
  variant.kernel = "capi_jit_mirror", variant.source = "jit_mirror.cuh",
  variant.name_expression = "jit_mirror<{block}>";
  variant.block = BLOCK;
  uint32_t id = 0;
  CHECK(metrale_registry_declare(rt, &variant, &id) == METRALE_OK, "%s", metrale_last_error());
  CHECK(metrale_registry_build(rt) == METRALE_OK, "%s", metrale_last_error());
  uint64_t handle = 0;
  const char* reason = NULL;
  CHECK(metrale_registry_handle(rt, id, &handle, &reason) == METRALE_OK, "%s", metrale_last_error());
  CHECK(handle != 0, "the host JIT's kernel is absent: %s", reason ? reason : "(no reason)");
  if (handle != 0) {
    float* x = malloc(sizeof(float) * BLOCK * BLOCKS);
    float* y = malloc(sizeof(float) * BLOCK * BLOCKS);
    for (int i = 0; i < BLOCK * BLOCKS; ++i) x[i] = (float)(int)uniform(-1000.0f, 1000.0f);
    for (int i = 0; i < BLOCK * BLOCKS; ++i) y[i] = -12345.0f; /* a value the kernel cannot write */
    const float s = 0.5f;
    const int32_t blocks = BLOCKS;
    const uint64_t px = (uint64_t)(uintptr_t)x, py = (uint64_t)(uintptr_t)y;
    const metrale_kernel_arg args[4] = {{&px, sizeof px}, {&py, sizeof py}, {&s, sizeof s}, {&blocks, sizeof blocks}};
    metrale_launch_config config;
    metrale_launch_config_init(&config);
    config.grid[0] = BLOCKS, config.block[0] = BLOCK;
    CHECK(metrale_launch(rt, handle, &config, args, 4, 0) == METRALE_OK, "%s", metrale_last_error());
    CHECK(metrale_synchronize(rt, 0) == METRALE_OK, "%s", metrale_last_error());
    for (int b = 0; b < BLOCKS; ++b) {
      for (int w = 0; w < BLOCK / WARP; ++w) {
        float sum = 0.0f;
        for (int l = 0; l < WARP; ++l) sum += x[b * BLOCK + BLOCK - 1 - (w * WARP + l)];
        for (int l = 0; l < WARP; ++l) {
          const int t = w * WARP + l;
          const float want = s * x[b * BLOCK + BLOCK - 1 - t] + sum;
          CHECK(y[b * BLOCK + t] == want, "y[%d][%d] = %g, reference %g", b, t, y[b * BLOCK + t], want);
        }
      }
    }
    free(x);
    free(y);
  }
  metrale_runtime_close(rt);
  return handle;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s CACHE_DIR (a fresh folder)\n", argv[0]);
    return 2;
  }
  metrale_runtime_options options;
  metrale_runtime_options_init(&options);
  options.backend = METRALE_BACKEND_HOST;
  options.target = "hopper";
  options.cache_dir = argv[1];
  options.host_worker_threads = 2;
  CHECK(build_and_run(&options) != 0, "first run (compiled)");
  CHECK(build_and_run(&options) != 0, "second run (the cached object)");
  if (failures != 0) {
    fprintf(stderr, "%d checks failed\n", failures);
    return 1;
  }
  printf("all C ABI host JIT checks passed\n");
  return 0;
}
