// ssm_ba_gates_mma.cuh: the Gated DeltaNet input gates on tensor cores. The same outputs as
// ssm_ba_gates.cuh (acc[m][n] = sum_k x[m][k] * W[n][k], then ba_gates_store), from bf16 MMAs
// with fp32 accumulation; not byte-equal to the parent (another summation order).
// Owned by the kernels area.
// Template parameters:
// - BLOCK: threads per block, a whole number of warps;
// - TOKENS: the tokens a block owns (a multiple of 16; one 16-row MMA tile per TOKENS / 16).
// The warps split as (TOKENS / 16) token tiles x (warps / (TOKENS / 16)) output slices; a warp
// accumulates its token tile against kMmaNTiles / slices output tiles of 16 (slice s takes tiles
// s, s + slices, ...), so N <= 128.
// Shipped as {BLOCK 256, TOKENS 64}: 4 token tiles x 2 slices of 4 output tiles, 32 fp32
// accumulators per thread.
// Data flow: a block streams its x tile [TOKENS][K] and the whole weight [N][K] through shared
// memory in K chunks of kMmaChunk (16-byte cp.async copies, kMmaStages deep, zero-filled past M,
// N and K), so the weight is read from L2 once per token tile; the accumulators go to shared
// memory (mma_store_row, reusing the stage buffers) and the epilogue applies ba_gates_store, the
// parent's own gate math, writing each token's outputs by consecutive threads.
// Invariants:
// - every MMA call is warp-uniform (the token/output-tile loops depend only on the warp index and
//   N), as PTX wmma's .sync.aligned requires; every thread reaches every barrier;
// - rows past M or N and K columns past K are zeros in shared memory, so they add nothing, and
//   nothing is written outside [0, M) x [0, 2 nv);
// - token x row-stride and output x K products are 64-bit.
// Arguments: as ssm_ba_gates.cuh. x rows and weight 16-byte aligned, K % 8 == 0, N <= 128 (the
// op and its guard check). Grid: (ceil(M / TOKENS), 1, 1).
#pragma once

#include "metrale_arith.cuh"
#include "ssm_ba_gates.cuh"

namespace metrale {
namespace kernels {

// The widest N the kernel takes: 8 output tiles of 16.
constexpr unsigned int kMmaNTiles = 8;
constexpr unsigned int kMmaMaxN = kMmaNTiles * kMmaTile;
// K elements per pipeline stage (two MMA k-steps), and stages in flight.
constexpr unsigned int kMmaChunk = 32;
constexpr unsigned int kMmaStages = 3;
// A staged row: the chunk plus 16 bytes, so a warp's 8 row reads of one wmma load hit 8
// distinct bank groups (80-byte rows) and every 16-row tile stays 32-byte aligned.
constexpr unsigned int kMmaRowLd = kMmaChunk + 8;
// The accumulator tile's row (floats): 128 outputs plus 4, 16-byte rows, 32-byte tile starts.
constexpr unsigned int kMmaAccLd = kMmaMaxN + 4;

template <unsigned int BLOCK, unsigned int TOKENS>
struct BaGatesMmaShape {
  static_assert(BLOCK % 32 == 0 && BLOCK >= 32 && BLOCK <= 1024, "BLOCK must be whole warps in [32, 1024]");
  static_assert(TOKENS % kMmaTile == 0 && TOKENS >= kMmaTile, "TOKENS must be a positive multiple of 16");
  static constexpr unsigned int kWarps = BLOCK / 32;
  static constexpr unsigned int kTokenTiles = TOKENS / kMmaTile;
  static_assert(kWarps % kTokenTiles == 0, "the warps must split evenly over the token tiles");
  static constexpr unsigned int kSlices = kWarps / kTokenTiles;
  static_assert(kMmaNTiles % kSlices == 0, "the output tiles must split evenly over a token tile's warps");
  static constexpr unsigned int kTilesPerWarp = kMmaNTiles / kSlices;
  static constexpr unsigned int kVecPerRow = kMmaChunk / 8;  // 16-byte copies per staged row
  static constexpr unsigned int kStageX = TOKENS * kMmaRowLd;
  static constexpr unsigned int kStageW = kMmaMaxN * kMmaRowLd;
  static constexpr unsigned int kStageBytes = kMmaStages * (kStageX + kStageW) * 2u;
  static constexpr unsigned int kAccBytes = TOKENS * kMmaAccLd * 4u;
  static constexpr unsigned int kSmemBytes = kStageBytes > kAccBytes ? kStageBytes : kAccBytes;
  static_assert(kSmemBytes <= 48u * 1024u, "static shared memory is limited to 48 KiB");
};

// The block's shared memory, aligned for wmma tiles (32 bytes) and 16-byte copies.
template <unsigned int BYTES>
struct alignas(128) BaGatesMmaSmem {
  unsigned char bytes[BYTES];
};

// Issues the copies of K chunk `chunk` into stage buffers xs [TOKENS][kMmaRowLd] and
// ws [kMmaMaxN][kMmaRowLd]; one commit group per call (empty past the last chunk).
template <unsigned int BLOCK, unsigned int TOKENS>
__device__ inline void ba_gates_mma_stage(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ weight,
                                          unsigned short* xs, unsigned short* ws, unsigned int token0,
                                          unsigned int chunk, unsigned int chunks, unsigned int m, unsigned int n,
                                          unsigned int k, unsigned int k_stride) {
  using Shape = BaGatesMmaShape<BLOCK, TOKENS>;
  if (chunk < chunks) {
    const unsigned int k0 = chunk * kMmaChunk;
    const unsigned int n_rows = (n + kMmaTile - 1u) / kMmaTile * kMmaTile;  // whole output tiles
    for (unsigned int v = threadIdx.x; v < (TOKENS + n_rows) * Shape::kVecPerRow; v += BLOCK) {
      const unsigned int row = v / Shape::kVecPerRow;
      const unsigned int kk = k0 + (v % Shape::kVecPerRow) * 8u;
      if (row < TOKENS) {
        const unsigned int token = token0 + row;
        const bool valid = token < m && kk < k;
        const __nv_bfloat16* src = valid ? x + static_cast<unsigned long long>(token) * k_stride + kk : x;
        async_copy_16(xs + row * kMmaRowLd + (kk - k0), src, valid);
      } else {
        const unsigned int out = row - TOKENS;
        const bool valid = out < n && kk < k;
        const __nv_bfloat16* src = valid ? weight + static_cast<unsigned long long>(out) * k + kk : weight;
        async_copy_16(ws + out * kMmaRowLd + (kk - k0), src, valid);
      }
    }
  }
  async_copy_commit();
}

template <unsigned int BLOCK, unsigned int TOKENS>
__global__ void __launch_bounds__(BLOCK, 1)
    ssm_ba_gates_mma(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ weight,
                     const float* __restrict__ a_log, const float* __restrict__ dt_bias, float* __restrict__ gate_out,
                     unsigned int m, unsigned int n, unsigned int k, unsigned int k_stride, unsigned int gate_stride,
                     unsigned int nv, unsigned int vheads_per_group) {
  using Shape = BaGatesMmaShape<BLOCK, TOKENS>;
  // The stages while accumulating, then the accumulator tile: one buffer, both uses.
  __shared__ BaGatesMmaSmem<Shape::kSmemBytes> smem;
  unsigned short* stage_x = reinterpret_cast<unsigned short*>(smem.bytes);
  unsigned short* stage_w = stage_x + kMmaStages * Shape::kStageX;
  float* acc_tile = reinterpret_cast<float*>(smem.bytes);

  const unsigned int token0 = blockIdx.x * TOKENS;
  const unsigned int warp = threadIdx.x / 32u;
  const unsigned int token_tile = warp % Shape::kTokenTiles;
  // Output tiles are dealt round-robin over the slices (slice, slice + kSlices, ...), so an N
  // of fewer than 8 tiles still spreads evenly: N = 96 is 3 + 3 tiles, not 4 + 2.
  const unsigned int slice = warp / Shape::kTokenTiles;
  const unsigned int out_tiles = (n + kMmaTile - 1u) / kMmaTile;
  const unsigned int chunks = (k + kMmaChunk - 1u) / kMmaChunk;

  MmaF32Fragment acc[Shape::kTilesPerWarp];
  for (unsigned int t = 0; t < Shape::kTilesPerWarp; ++t) {
    mma_zero(acc[t]);
  }

  for (unsigned int s = 0; s + 1u < kMmaStages; ++s) {
    ba_gates_mma_stage<BLOCK, TOKENS>(x, weight, stage_x + s * Shape::kStageX, stage_w + s * Shape::kStageW, token0, s,
                                      chunks, m, n, k, k_stride);
  }
  for (unsigned int c = 0; c < chunks; ++c) {
    async_copy_wait<kMmaStages - 2u>();
    // Chunk c has landed for every thread, and every warp is done with chunk c - 1's stage.
    __syncthreads();
    const unsigned int next = c + kMmaStages - 1u;
    ba_gates_mma_stage<BLOCK, TOKENS>(x, weight, stage_x + (next % kMmaStages) * Shape::kStageX,
                                      stage_w + (next % kMmaStages) * Shape::kStageW, token0, next, chunks, m, n, k,
                                      k_stride);
    const unsigned short* xs = stage_x + (c % kMmaStages) * Shape::kStageX + token_tile * kMmaTile * kMmaRowLd;
    const unsigned short* ws = stage_w + (c % kMmaStages) * Shape::kStageW;
    for (unsigned int kk = 0; kk < kMmaChunk; kk += kMmaTile) {
      MmaBf16Fragment a;
      mma_load_a_row(a, xs + kk, kMmaRowLd);
      for (unsigned int t = 0; t < Shape::kTilesPerWarp; ++t) {
        const unsigned int tile = slice + t * Shape::kSlices;
        if (tile < out_tiles) {
          MmaBf16Fragment b;
          mma_load_b_col(b, ws + tile * kMmaTile * kMmaRowLd + kk, kMmaRowLd);
          mma_bf16_accumulate(acc[t], a, b);
        }
      }
    }
  }
  async_copy_wait<0>();
  // Every warp is done reading the stages before the accumulator tile overwrites them.
  __syncthreads();
  for (unsigned int t = 0; t < Shape::kTilesPerWarp; ++t) {
    const unsigned int tile = slice + t * Shape::kSlices;
    if (tile < out_tiles) {
      mma_store_row(acc_tile + token_tile * kMmaTile * kMmaAccLd + tile * kMmaTile, acc[t], kMmaAccLd);
    }
  }
  __syncthreads();
  for (unsigned int i = threadIdx.x; i < TOKENS * n; i += BLOCK) {
    const unsigned int row = i / n;
    const unsigned int n_out = i % n;
    const unsigned int token = token0 + row;
    if (token < m) {
      ba_gates_store(acc_tile[row * kMmaAccLd + n_out], n_out, nv, vheads_per_group, a_log, dt_bias,
                     gate_out + static_cast<unsigned long long>(token) * gate_stride);
    }
  }
}

}  // namespace kernels
}  // namespace metrale
