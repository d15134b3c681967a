// tile_mma.cuh: test kernels for the host backend's wmma emulation (metrale_arith.cuh's mma_*
// functions): one warp multiplies a [16][32] bf16 A (row-major, ldm 40) by a [32][16] B held as
// [16 n][40] rows (column-major B, ldm 40) into a [16][20] fp32 D; and misuses the host must report.
#pragma once

#include "../../../templates/metrale_arith.cuh"

namespace metrale_test {

constexpr unsigned int kProbeLd = 40;
constexpr unsigned int kProbeOutLd = 20;

// D = A B over K = 32, two MMAs of 16, into d [16][kProbeOutLd].
__global__ void tile_mma_probe(const unsigned short* a, const unsigned short* b, float* d) {
  using namespace metrale::kernels;
  MmaF32Fragment acc;
  mma_zero(acc);
  for (unsigned int kk = 0; kk < 32u; kk += 16u) {
    MmaBf16Fragment fa;
    MmaBf16Fragment fb;
    mma_load_a_row(fa, a + kk, kProbeLd);
    mma_load_b_col(fb, b + kk, kProbeLd);
    mma_bf16_accumulate(acc, fa, fb);
  }
  mma_store_row(d, acc, kProbeOutLd);
}

// Odd lanes name another tile: wmma needs one warp-uniform address.
__global__ void tile_mma_divergent_tile(const unsigned short* a, const unsigned short* /*b*/, float* /*d*/) {
  metrale::kernels::MmaBf16Fragment fa;
  metrale::kernels::mma_load_a_row(fa, a + (threadIdx.x % 2u) * 16u, kProbeLd);
}

// 16 bytes past a 32-byte boundary.
__global__ void tile_mma_misaligned(const unsigned short* a, const unsigned short* /*b*/, float* /*d*/) {
  metrale::kernels::MmaBf16Fragment fa;
  metrale::kernels::mma_load_a_row(fa, a + 8u, kProbeLd);
}

// ldm 12: not a whole number of 16-byte rows.
__global__ void tile_mma_bad_ldm(const unsigned short* /*a*/, const unsigned short* /*b*/, float* d) {
  metrale::kernels::MmaF32Fragment acc;
  metrale::kernels::mma_zero(acc);
  metrale::kernels::mma_store_row(d, acc, 18u);
}

}  // namespace metrale_test
