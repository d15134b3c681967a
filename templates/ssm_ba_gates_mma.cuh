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
// N and K; each block starts at its own chunk and wraps), so the weight is read from L2 once per
// token tile; the accumulators go to shared
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
  // A stage: the x tile's TOKENS rows, then the weight's kMmaMaxN rows, kMmaRowLd elements each.
  static constexpr unsigned int kStageRows = TOKENS + kMmaMaxN;
  static constexpr unsigned int kStage = kStageRows * kMmaRowLd;
  static constexpr unsigned int kStageBytes = kMmaStages * kStage * 2u;
  static constexpr unsigned int kAccBytes = TOKENS * kMmaAccLd * 4u;
  static constexpr unsigned int kSmemBytes = kStageBytes > kAccBytes ? kStageBytes : kAccBytes;
  static_assert(kSmemBytes <= 48u * 1024u, "static shared memory is limited to 48 KiB");
  // 16-byte copies a thread issues per stage, in fixed slots (the same rows every chunk).
  static constexpr unsigned int kCopySlots = (kStageRows * kVecPerRow + BLOCK - 1u) / BLOCK;
};

// The block's shared memory, aligned for wmma tiles (32 bytes) and 16-byte copies.
template <unsigned int BYTES>
struct alignas(128) BaGatesMmaSmem {
  unsigned char bytes[BYTES];
};

// One thread's share of a stage's copies, worked out once: per slot its source row (already at
// the slot's K offset), its place in a stage, its K offset in the chunk, and whether the row is
// staged at all (rows past the last output tile are never read) or read from memory (rows past M
// or N are zero-filled). Why: recomputing rows and 64-bit addresses per copy per chunk was most
// of the main loop's instructions on the H200 (ncu: 5.2 cycles per issue, half in ALU latency).
template <unsigned int BLOCK, unsigned int TOKENS>
struct BaGatesMmaCopies {
  using Shape = BaGatesMmaShape<BLOCK, TOKENS>;
  const __nv_bfloat16* src[Shape::kCopySlots];
  unsigned int dst[Shape::kCopySlots];
  unsigned int k_offset[Shape::kCopySlots];
  bool staged[Shape::kCopySlots];
  bool readable[Shape::kCopySlots];

  __device__ inline BaGatesMmaCopies(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ weight,
                                     unsigned int token0, unsigned int m, unsigned int n, unsigned int k,
                                     unsigned int k_stride) {
    const unsigned int n_rows = (n + kMmaTile - 1u) / kMmaTile * kMmaTile;  // whole output tiles
    METRALE_UNROLL
    for (unsigned int slot = 0; slot < Shape::kCopySlots; ++slot) {
      const unsigned int v = threadIdx.x + slot * BLOCK;
      const unsigned int row = v / Shape::kVecPerRow;
      k_offset[slot] = (v % Shape::kVecPerRow) * 8u;
      dst[slot] = row * kMmaRowLd + k_offset[slot];
      staged[slot] = row < TOKENS + n_rows;
      if (row < TOKENS) {
        const unsigned int token = token0 + row;
        readable[slot] = token < m;
        src[slot] = readable[slot] ? x + static_cast<unsigned long long>(token) * k_stride + k_offset[slot] : x;
      } else {
        const unsigned int out = row - TOKENS;
        readable[slot] = out < n;
        src[slot] = readable[slot] ? weight + static_cast<unsigned long long>(out) * k + k_offset[slot] : weight;
      }
    }
  }

  // Issues the copies of the block's K step `step` into `stage`: chunk (step + first) mod
  // chunks, so blocks that start at different chunks read different weight rows at any moment.
  // One commit group per call (empty past the last step), so the wait counts stay uniform.
  __device__ inline void issue(unsigned short* stage, unsigned int step, unsigned int chunks, unsigned int first,
                               unsigned int k) const {
    if (step < chunks) {
      const unsigned int chunk = step + first < chunks ? step + first : step + first - chunks;
      const unsigned int k0 = chunk * kMmaChunk;
      METRALE_UNROLL
      for (unsigned int slot = 0; slot < Shape::kCopySlots; ++slot) {
        if (staged[slot]) {
          const bool valid = readable[slot] && k0 + k_offset[slot] < k;
          async_copy_16(stage + dst[slot], valid ? src[slot] + k0 : src[slot], valid);
        }
      }
    }
    async_copy_commit();
  }
};

// The K loop for a warp with TILES output tiles (warp-uniform; its tiles are slice, slice +
// kSlices, ...): every chunk loads the warp's A and B fragments first, then issues its MMAs, with
// no branch between them, so the loads overlap and ptxas can interleave them with the MMAs.
template <unsigned int BLOCK, unsigned int TOKENS, unsigned int TILES>
__device__ inline void ba_gates_mma_k_loop(const BaGatesMmaCopies<BLOCK, TOKENS>& copies, unsigned short* stages,
                                           MmaF32Fragment (&acc)[BaGatesMmaShape<BLOCK, TOKENS>::kTilesPerWarp],
                                           unsigned int token_tile, unsigned int slice, unsigned int chunks,
                                           unsigned int first, unsigned int k) {
  using Shape = BaGatesMmaShape<BLOCK, TOKENS>;
  constexpr unsigned int kSteps = kMmaChunk / kMmaTile;
  const unsigned int a_offset = token_tile * kMmaTile * kMmaRowLd;
  const unsigned int b_offset = (TOKENS + slice * kMmaTile) * kMmaRowLd;
  for (unsigned int c = 0; c < chunks; ++c) {
    async_copy_wait<kMmaStages - 2u>();
    // Chunk c has landed for every thread, and every warp is done with chunk c - 1's stage.
    __syncthreads();
    copies.issue(stages + ((c + kMmaStages - 1u) % kMmaStages) * Shape::kStage, c + kMmaStages - 1u, chunks, first, k);
    const unsigned short* stage = stages + (c % kMmaStages) * Shape::kStage;
    MmaBf16Fragment a[kSteps];
    MmaBf16Fragment b[kSteps][TILES > 0 ? TILES : 1];
    METRALE_UNROLL
    for (unsigned int step = 0; step < kSteps; ++step) {
      mma_load_a_row(a[step], stage + a_offset + step * kMmaTile, kMmaRowLd);
      METRALE_UNROLL
      for (unsigned int t = 0; t < TILES; ++t) {
        mma_load_b_col(b[step][t], stage + b_offset + t * Shape::kSlices * kMmaTile * kMmaRowLd + step * kMmaTile,
                       kMmaRowLd);
      }
    }
    METRALE_UNROLL
    for (unsigned int step = 0; step < kSteps; ++step) {
      METRALE_UNROLL
      for (unsigned int t = 0; t < TILES; ++t) {
        mma_bf16_accumulate(acc[t], a[step], b[step][t]);
      }
    }
  }
}

// Runs the K loop instantiated for this warp's tile count (0 .. kTilesPerWarp).
template <unsigned int BLOCK, unsigned int TOKENS, unsigned int TILES>
__device__ inline void ba_gates_mma_k_loop_for(unsigned int tiles, const BaGatesMmaCopies<BLOCK, TOKENS>& copies,
                                               unsigned short* stages,
                                               MmaF32Fragment (&acc)[BaGatesMmaShape<BLOCK, TOKENS>::kTilesPerWarp],
                                               unsigned int token_tile, unsigned int slice, unsigned int chunks,
                                               unsigned int first, unsigned int k) {
  if constexpr (TILES == 0) {
    ba_gates_mma_k_loop<BLOCK, TOKENS, 0>(copies, stages, acc, token_tile, slice, chunks, first, k);
  } else {
    if (tiles == TILES) {
      ba_gates_mma_k_loop<BLOCK, TOKENS, TILES>(copies, stages, acc, token_tile, slice, chunks, first, k);
    } else {
      ba_gates_mma_k_loop_for<BLOCK, TOKENS, TILES - 1u>(tiles, copies, stages, acc, token_tile, slice, chunks, first,
                                                         k);
    }
  }
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
  unsigned short* stages = reinterpret_cast<unsigned short*>(smem.bytes);
  float* acc_tile = reinterpret_cast<float*>(smem.bytes);

  const unsigned int token0 = blockIdx.x * TOKENS;
  const unsigned int warp = threadIdx.x / 32u;
  const unsigned int token_tile = warp % Shape::kTokenTiles;
  // Output tiles are dealt round-robin over the slices (slice, slice + kSlices, ...), so an N
  // of fewer than 8 tiles still spreads evenly: N = 96 is 3 + 3 tiles, not 4 + 2.
  const unsigned int slice = warp / Shape::kTokenTiles;
  const unsigned int out_tiles = (n + kMmaTile - 1u) / kMmaTile;
  const unsigned int tiles = out_tiles > slice ? (out_tiles - slice + Shape::kSlices - 1u) / Shape::kSlices : 0u;
  const unsigned int chunks = (k + kMmaChunk - 1u) / kMmaChunk;
  // The block's first chunk, spread evenly over the grid. Why: every block streams the same
  // weight; in lockstep all 128 SMs asked L2 for the same rows at once, and each chunk took
  // ~0.6 us on the H200 whatever the instruction count or x prefetch.
  const unsigned int first =
      static_cast<unsigned int>(static_cast<unsigned long long>(blockIdx.x) * chunks / gridDim.x);

  MmaF32Fragment acc[Shape::kTilesPerWarp];
  for (unsigned int t = 0; t < Shape::kTilesPerWarp; ++t) {
    mma_zero(acc[t]);
  }
  const BaGatesMmaCopies<BLOCK, TOKENS> copies(x, weight, token0, m, n, k, k_stride);
  for (unsigned int s = 0; s + 1u < kMmaStages; ++s) {
    copies.issue(stages + s * Shape::kStage, s, chunks, first, k);
  }
  const unsigned int warp_tiles = tiles < Shape::kTilesPerWarp ? tiles : Shape::kTilesPerWarp;
  ba_gates_mma_k_loop_for<BLOCK, TOKENS, Shape::kTilesPerWarp>(warp_tiles, copies, stages, acc, token_tile, slice,
                                                               chunks, first, k);
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
