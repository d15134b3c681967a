// jit_test_broken.cuh: a template with a syntax error on line 6, for the error-as-data tests.
#pragma once

template <int BLOCK>
__global__ void broken(float* out) {
  out[threadIdx.x] = BLOCK +;
}
