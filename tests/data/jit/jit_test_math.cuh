// jit_test_math.cuh: a helper header the test kernels #include by name (tests include
// resolution inside a source set and the digest's include closure).
#pragma once

namespace jit_test {
__device__ __forceinline__ float scaled(float x, float factor) { return __fmul_rn(x, factor); }
}  // namespace jit_test
