// ssm_ba_gates_mma.cuh: the Gated DeltaNet input gates on tensor cores. The same outputs as
// ssm_ba_gates.cuh (acc[m][n] = sum_k x[m][k] * W[n][k], then ba_gates_store), from bf16 MMAs
// with fp32 accumulation; not byte-equal to the parent (another summation order).
// Owned by the kernels area.
// Template parameters:
// - BLOCK: threads per block, a whole number of warps;
// - TOKENS: the tokens a block owns (a multiple of 16; one 16-row MMA tile per TOKENS / 16);
// - STAGES: K chunks in the shared-memory ring (2 .. 16); STAGES - 1 are in flight while one is
//   multiplied;
// - TILES: the output tiles ceil(N / 16) a shape-specialised variant is compiled for (1 .. 8), or 0,
//   the generic form, for any N <= 128. Why: the generic form instantiates its K loop once per tile
//   count a warp may get (0 .. 8) and picks one from N at run time; a specialised variant
//   instantiates only the counts its N gives (one when the tiles split evenly over a token tile's
//   warps: N = 96 on the shipped variant), so it compiles faster, its CUBIN is smaller and ptxas
//   sizes its registers for one loop. It takes only N with ceil(N / 16) == TILES (the launcher
//   checks; the kernel returns at once on another N rather than read past its tiles).
// The warps split as (TOKENS / 16) token tiles x (warps / (TOKENS / 16)) output slices; a warp
// accumulates its token tile against kMmaNTiles / slices output tiles of 16 (slice s takes tiles
// s, s + slices, ...), so N <= 128.
// Launch: as 1-D thread-block clusters of s CTAs (s = 1 without one; the op picks s with
// ba_gates_mma_cluster_blocks): cluster c owns tokens [c TOKENS, (c + 1) TOKENS) and its CTA of
// rank r the r-th contiguous 1/s of the K chunks; after the K loop each CTA stores its fp32
// partial tile to its own shared memory, the cluster syncs, and CTA r sums rows
// [r TOKENS / s, (r + 1) TOKENS / s) of every rank's tile, in rank order (so the result does not
// depend on timing), for its epilogue; a last cluster sync keeps each tile alive until its
// readers are done.
// Shipped on hopper as {BLOCK 256, TOKENS 128, STAGES 6} in clusters of 2 at M 8192: 8 token
// tiles of 16 x 6 output tiles per warp, 5 chunks of 64 K in flight (80 KiB of x and 60 KiB of
// weight at N 96) in 189 KiB of dynamic shared memory; 64 clusters fill 128 SMs and each SM reads
// half the weight, so the weight crosses L2 64 times instead of 128.
// Data flow: a CTA streams its x tile [TOKENS][K range] and the weight's rows [N][K range]
// through dynamic shared memory in K chunks of kMmaChunk (16-byte cp.async copies, STAGES deep,
// zero-filled past M, N and K; each cluster starts at its own chunk of the range and wraps); the
// accumulators go to shared memory (mma_store_row, reusing the stage buffers) and the epilogue
// applies ba_gates_store, the parent's own gate math, writing each token's outputs by
// consecutive threads.
// Why this depth: with 3 stages of 32 K (2 groups, 20 KiB, in flight) the H200 measured 86 us at
// M 8192 K 5120 N 96, one ~1 us round trip per 20 KiB a block streams (BENCHMARKS.md); the
// bytes in flight, not the instruction count, set the pace.
// Invariants:
// - the launch's dynamic shared memory is ba_gates_mma_shared_bytes(TOKENS, N, STAGES) (the op's
//   launcher computes the same; the host backend reports a kernel writing past what was asked);
// - every CTA of a cluster reaches both cluster syncs (none returns early unless all do);
// - every MMA call is warp-uniform (the token/output-tile loops depend only on the warp index and
//   N), as PTX wmma's .sync.aligned requires; every thread reaches every barrier;
// - rows past M or N and K columns past K are zeros in shared memory, so they add nothing, and
//   nothing is written outside [0, M) x [0, 2 nv);
// - token x row-stride and output x K products are 64-bit.
// Arguments: as ssm_ba_gates.cuh. x rows and weight 16-byte aligned, K % 8 == 0, N <= 128 (the
// op and its guard check; the kernel returns at once past 128 rather than overrun its stages).
// Grid: (ceil(M / TOKENS) x s, 1, 1), clusters of (s, 1, 1).
#pragma once

#include "metrale_arith.cuh"
#include "ssm_ba_gates.cuh"

namespace metrale {
namespace kernels {

// The widest N the kernel takes: 8 output tiles of 16.
constexpr unsigned int kMmaNTiles = 8;
constexpr unsigned int kMmaMaxN = kMmaNTiles * kMmaTile;
// K elements per pipeline stage (four MMA k-steps), and the deepest ring.
constexpr unsigned int kMmaChunk = 64;
constexpr unsigned int kMmaMaxStages = 16;
// A staged row: the chunk plus 16 bytes, so a warp's 8 row reads of one wmma load hit 8
// distinct bank groups (144-byte rows) and every 16-row tile stays 32-byte aligned.
constexpr unsigned int kMmaRowLd = kMmaChunk + 8;
// The accumulator tile's row (floats): 128 outputs plus 4, 16-byte rows, 32-byte tile starts.
constexpr unsigned int kMmaAccLd = kMmaMaxN + 4;
// K steps whose fragments a warp loads before it issues their MMAs.
constexpr unsigned int kMmaBatch = 2;

// The output tiles of N (rounded up), the TILES a specialised variant for N takes.
__host__ __device__ constexpr unsigned int ba_gates_mma_out_tiles(unsigned int n) {
  return (n + kMmaTile - 1u) / kMmaTile;
}

// Elements of one stage: the x tile's `tokens` rows, then N rounded up to whole output tiles.
__host__ __device__ constexpr unsigned int ba_gates_mma_stage_elems(unsigned int tokens, unsigned int n) {
  return (tokens + (n + kMmaTile - 1u) / kMmaTile * kMmaTile) * kMmaRowLd;
}

// The dynamic shared memory a launch needs: the stage ring, or the accumulator tile that reuses
// it once the K loop is done, whichever is larger.
__host__ __device__ constexpr unsigned int ba_gates_mma_shared_bytes(unsigned int tokens, unsigned int n,
                                                                     unsigned int stages) {
  const unsigned int ring = stages * ba_gates_mma_stage_elems(tokens, n) * 2u;
  const unsigned int acc = tokens * kMmaAccLd * 4u;
  return ring > acc ? ring : acc;
}

template <unsigned int BLOCK, unsigned int TOKENS, unsigned int STAGES>
struct BaGatesMmaShape {
  static_assert(BLOCK % 32 == 0 && BLOCK >= 32 && BLOCK <= 1024, "BLOCK must be whole warps in [32, 1024]");
  static_assert(TOKENS % kMmaTile == 0 && TOKENS >= kMmaTile, "TOKENS must be a positive multiple of 16");
  static_assert(STAGES >= 2 && STAGES <= kMmaMaxStages, "STAGES must be in [2, 16]");
  static constexpr unsigned int kWarps = BLOCK / 32;
  static constexpr unsigned int kTokenTiles = TOKENS / kMmaTile;
  static_assert(kWarps % kTokenTiles == 0, "the warps must split evenly over the token tiles");
  static constexpr unsigned int kSlices = kWarps / kTokenTiles;
  static_assert(kMmaNTiles % kSlices == 0, "the output tiles must split evenly over a token tile's warps");
  static constexpr unsigned int kTilesPerWarp = kMmaNTiles / kSlices;
  static constexpr unsigned int kVecPerRow = kMmaChunk / 8;  // 16-byte copies per staged row
  static constexpr unsigned int kMaxStageRows = TOKENS + kMmaMaxN;
  // 16-byte copies a thread issues per stage, in fixed slots (the same rows every chunk).
  static constexpr unsigned int kCopySlots = (kMaxStageRows * kVecPerRow + BLOCK - 1u) / BLOCK;
  static_assert(ba_gates_mma_shared_bytes(TOKENS, kMmaMaxN, STAGES) <= 227u * 1024u,
                "at N = 128 the stages must fit the 227 KiB a block may opt in to");
};

// The output tiles one warp of a TILES variant multiplies: slice s gets ceil((tiles - s) / kSlices)
// of them, so at most two counts occur (kMost for the first tiles % kSlices slices, kFewest for the
// others); the generic form (TILES 0) may meet any count from 0 to kTilesPerWarp.
template <unsigned int BLOCK, unsigned int TOKENS, unsigned int STAGES, unsigned int TILES>
struct BaGatesMmaWarpTiles {
  using Shape = BaGatesMmaShape<BLOCK, TOKENS, STAGES>;
  static_assert(TILES <= kMmaNTiles, "TILES must be in [0, 8] (0: the generic form)");
  static constexpr unsigned int kMost =
      TILES == 0 ? Shape::kTilesPerWarp : (TILES + Shape::kSlices - 1u) / Shape::kSlices;
  static constexpr unsigned int kFewest = TILES == 0 ? 0u : TILES / Shape::kSlices;
};

// The K chunks one CTA multiplies: [begin, begin + count), starting at begin + first and wrapping.
struct BaGatesMmaKRange {
  unsigned int begin;
  unsigned int count;
  unsigned int first;
};

// One thread's share of a stage's copies, worked out once: per slot its source (already at the
// slot's K offset; row 0's for a row past M or N, which is never read), its byte offset in a
// stage, the bytes it reads (16, or 0 for a row past M or N: zero-filled), its K offset in the
// chunk, and whether the row is staged at all (rows past the last output tile are never read).
// Why: recomputing rows, 64-bit addresses and validity per copy per chunk was most of the main
// loop's instructions on the H200 (ncu: the K loop is bound by instruction latency at 8 warps
// per SM); a whole chunk (all but the last, when K % 64 != 0) now costs a 64-bit add, a shared
// address and the copy per slot.
template <unsigned int BLOCK, unsigned int TOKENS, unsigned int STAGES>
struct BaGatesMmaCopies {
  using Shape = BaGatesMmaShape<BLOCK, TOKENS, STAGES>;
  const __nv_bfloat16* src[Shape::kCopySlots];
  unsigned int dst_bytes[Shape::kCopySlots];
  unsigned int src_bytes[Shape::kCopySlots];
  unsigned int k_offset[Shape::kCopySlots];
  bool staged[Shape::kCopySlots];

  __device__ inline BaGatesMmaCopies(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ weight,
                                     unsigned int token0, unsigned int m, unsigned int n, unsigned int k,
                                     unsigned int k_stride) {
    const unsigned int n_rows = (n + kMmaTile - 1u) / kMmaTile * kMmaTile;  // whole output tiles
    METRALE_UNROLL
    for (unsigned int slot = 0; slot < Shape::kCopySlots; ++slot) {
      const unsigned int v = threadIdx.x + slot * BLOCK;
      const unsigned int row = v / Shape::kVecPerRow;
      k_offset[slot] = (v % Shape::kVecPerRow) * 8u;
      dst_bytes[slot] = (row * kMmaRowLd + k_offset[slot]) * 2u;
      staged[slot] = row < TOKENS + n_rows;
      bool readable = false;
      if (row < TOKENS) {
        const unsigned int token = token0 + row;
        readable = token < m;
        src[slot] = (readable ? x + static_cast<unsigned long long>(token) * k_stride : x) + k_offset[slot];
      } else {
        const unsigned int out = row - TOKENS;
        readable = out < n;
        src[slot] = (readable ? weight + static_cast<unsigned long long>(out) * k : weight) + k_offset[slot];
      }
      src_bytes[slot] = readable ? 16u : 0u;
    }
  }

  // Issues the copies of the CTA's K step `step` into `stage`: chunk begin + (step + first) mod
  // count, so clusters that start at different chunks read different weight rows at any moment.
  // One commit group per call (empty past the last step), so the wait counts stay uniform.
  __device__ inline void issue(unsigned short* stage, unsigned int step, const BaGatesMmaKRange& range,
                               unsigned int k) const {
    if (step < range.count) {
      const unsigned int turn = step + range.first;
      const unsigned int chunk = range.begin + (turn < range.count ? turn : turn - range.count);
      const unsigned int k0 = chunk * kMmaChunk;
      unsigned char* stage_bytes = reinterpret_cast<unsigned char*>(stage);
      if (k0 + kMmaChunk <= k) {
        // A whole chunk (block-uniform): every slot's K offset is inside the row.
        METRALE_UNROLL
        for (unsigned int slot = 0; slot < Shape::kCopySlots; ++slot) {
          if (staged[slot]) {
            async_copy_16_bytes(stage_bytes + dst_bytes[slot], src[slot] + k0, src_bytes[slot]);
          }
        }
      } else {
        METRALE_UNROLL
        for (unsigned int slot = 0; slot < Shape::kCopySlots; ++slot) {
          if (staged[slot]) {
            const bool in_k = k0 + k_offset[slot] < k;
            async_copy_16_bytes(stage_bytes + dst_bytes[slot], in_k ? src[slot] + k0 : src[slot],
                                in_k ? src_bytes[slot] : 0u);
          }
        }
      }
    }
    async_copy_commit();
  }
};

// The K loop for a warp with TILES output tiles (warp-uniform; its tiles are slice, slice +
// kSlices, ...): per batch of kMmaBatch k-steps it loads the warp's A and B fragments first, then
// issues their MMAs, with no branch between them, so the loads overlap and ptxas can interleave
// them with the MMAs. The ring's stage for chunk c is c mod STAGES; the copies issued at chunk c
// go to the stage chunk c - 1 used, which every warp has left once the barrier is passed.
template <unsigned int BLOCK, unsigned int TOKENS, unsigned int STAGES, unsigned int TILES, unsigned int ACC>
__device__ inline void ba_gates_mma_k_loop(const BaGatesMmaCopies<BLOCK, TOKENS, STAGES>& copies,
                                           unsigned short* stages, unsigned int stage_elems, MmaF32Fragment (&acc)[ACC],
                                           unsigned int token_tile, unsigned int slice, const BaGatesMmaKRange& range,
                                           unsigned int k) {
  using Shape = BaGatesMmaShape<BLOCK, TOKENS, STAGES>;
  static_assert(TILES <= ACC, "a warp's tiles must fit its accumulators");
  constexpr unsigned int kSteps = kMmaChunk / kMmaTile;
  static_assert(kSteps % kMmaBatch == 0, "the batches must cover the chunk's k-steps");
  const unsigned int a_offset = token_tile * kMmaTile * kMmaRowLd;
  const unsigned int b_offset = (TOKENS + slice * kMmaTile) * kMmaRowLd;
  unsigned int read_stage = 0;
  unsigned int write_stage = STAGES - 1u;
  for (unsigned int c = 0; c < range.count; ++c) {
    async_copy_wait<STAGES - 2u>();
    // Chunk c has landed for every thread, and every warp is done with chunk c - 1's stage.
    __syncthreads();
    copies.issue(stages + write_stage * stage_elems, c + STAGES - 1u, range, k);
    const unsigned short* stage = stages + read_stage * stage_elems;
    METRALE_UNROLL
    for (unsigned int batch = 0; batch < kSteps; batch += kMmaBatch) {
      MmaBf16Fragment a[kMmaBatch];
      MmaBf16Fragment b[kMmaBatch][TILES > 0 ? TILES : 1];
      METRALE_UNROLL
      for (unsigned int step = 0; step < kMmaBatch; ++step) {
        const unsigned int k_in_chunk = (batch + step) * kMmaTile;
        mma_load_a_row(a[step], stage + a_offset + k_in_chunk, kMmaRowLd);
        METRALE_UNROLL
        for (unsigned int t = 0; t < TILES; ++t) {
          mma_load_b_col(b[step][t], stage + b_offset + t * Shape::kSlices * kMmaTile * kMmaRowLd + k_in_chunk,
                         kMmaRowLd);
        }
      }
      METRALE_UNROLL
      for (unsigned int step = 0; step < kMmaBatch; ++step) {
        METRALE_UNROLL
        for (unsigned int t = 0; t < TILES; ++t) {
          mma_bf16_accumulate(acc[t], a[step], b[step][t]);
        }
      }
    }
    read_stage = read_stage + 1u == STAGES ? 0u : read_stage + 1u;
    write_stage = write_stage + 1u == STAGES ? 0u : write_stage + 1u;
  }
}

// The generic form: runs the K loop instantiated for this warp's tile count (0 .. kTilesPerWarp).
template <unsigned int BLOCK, unsigned int TOKENS, unsigned int STAGES, unsigned int TILES>
__device__ inline void ba_gates_mma_k_loop_for(
    unsigned int tiles, const BaGatesMmaCopies<BLOCK, TOKENS, STAGES>& copies, unsigned short* stages,
    unsigned int stage_elems, MmaF32Fragment (&acc)[BaGatesMmaShape<BLOCK, TOKENS, STAGES>::kTilesPerWarp],
    unsigned int token_tile, unsigned int slice, const BaGatesMmaKRange& range, unsigned int k) {
  if constexpr (TILES == 0) {
    ba_gates_mma_k_loop<BLOCK, TOKENS, STAGES, 0>(copies, stages, stage_elems, acc, token_tile, slice, range, k);
  } else {
    if (tiles == TILES) {
      ba_gates_mma_k_loop<BLOCK, TOKENS, STAGES, TILES>(copies, stages, stage_elems, acc, token_tile, slice, range, k);
    } else {
      ba_gates_mma_k_loop_for<BLOCK, TOKENS, STAGES, TILES - 1u>(tiles, copies, stages, stage_elems, acc, token_tile,
                                                                 slice, range, k);
    }
  }
}

template <unsigned int BLOCK, unsigned int TOKENS, unsigned int STAGES, unsigned int TILES = 0>
__global__ void __launch_bounds__(BLOCK, 1)
    ssm_ba_gates_mma(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ weight,
                     const float* __restrict__ a_log, const float* __restrict__ dt_bias, float* __restrict__ gate_out,
                     unsigned int m, unsigned int n, unsigned int k, unsigned int k_stride, unsigned int gate_stride,
                     unsigned int nv, unsigned int vheads_per_group) {
  using Shape = BaGatesMmaShape<BLOCK, TOKENS, STAGES>;
  using WarpTiles = BaGatesMmaWarpTiles<BLOCK, TOKENS, STAGES, TILES>;
  if (n > kMmaMaxN || (TILES != 0 && ba_gates_mma_out_tiles(n) != TILES)) {
    return;  // refused by the launcher; the stage rows (or this variant's tiles) would not hold it
  }
  // The stages while accumulating, then the accumulator tile: one buffer, both uses.
  unsigned short* stages = reinterpret_cast<unsigned short*>(dynamic_shared_memory());
  float* acc_tile = reinterpret_cast<float*>(dynamic_shared_memory());
  const unsigned int stage_elems = ba_gates_mma_stage_elems(TOKENS, n);

  // The cluster's CTAs share one token tile and split its K chunks.
  const unsigned int splits = cluster_cta_count();
  const unsigned int rank = cluster_cta_rank();
  const unsigned int tile_index = blockIdx.x / splits;
  const unsigned int tile_count = gridDim.x / splits;
  const unsigned int token0 = tile_index * TOKENS;
  const unsigned int warp = threadIdx.x / 32u;
  const unsigned int token_tile = warp % Shape::kTokenTiles;
  // Output tiles are dealt round-robin over the slices (slice, slice + kSlices, ...), so an N
  // of fewer than 8 tiles still spreads evenly: N = 96 is 3 + 3 tiles, not 4 + 2.
  const unsigned int slice = warp / Shape::kTokenTiles;
  const unsigned int out_tiles = TILES != 0 ? TILES : ba_gates_mma_out_tiles(n);
  const unsigned int tiles = out_tiles > slice ? (out_tiles - slice + Shape::kSlices - 1u) / Shape::kSlices : 0u;
  const unsigned int chunks = (k + kMmaChunk - 1u) / kMmaChunk;
  BaGatesMmaKRange range;
  range.begin = static_cast<unsigned int>(static_cast<unsigned long long>(rank) * chunks / splits);
  range.count = static_cast<unsigned int>(static_cast<unsigned long long>(rank + 1u) * chunks / splits) - range.begin;
  // The tile's first chunk, spread evenly over the grid. Why: every tile streams the same
  // weight; in lockstep all 128 SMs asked L2 for the same rows at once, and each chunk took
  // ~0.6 us on the H200 whatever the instruction count or x prefetch.
  range.first = static_cast<unsigned int>(static_cast<unsigned long long>(tile_index) * range.count / tile_count);

  MmaF32Fragment acc[WarpTiles::kMost > 0 ? WarpTiles::kMost : 1];
  for (unsigned int t = 0; t < WarpTiles::kMost; ++t) {
    mma_zero(acc[t]);
  }
  const BaGatesMmaCopies<BLOCK, TOKENS, STAGES> copies(x, weight, token0, m, n, k, k_stride);
  for (unsigned int s = 0; s + 1u < STAGES; ++s) {
    copies.issue(stages + s * stage_elems, s, range, k);
  }
  const unsigned int warp_tiles = tiles < WarpTiles::kMost ? tiles : WarpTiles::kMost;
  if constexpr (TILES == 0) {
    ba_gates_mma_k_loop_for<BLOCK, TOKENS, STAGES, Shape::kTilesPerWarp>(warp_tiles, copies, stages, stage_elems, acc,
                                                                         token_tile, slice, range, k);
  } else if constexpr (WarpTiles::kMost == WarpTiles::kFewest) {
    ba_gates_mma_k_loop<BLOCK, TOKENS, STAGES, WarpTiles::kMost>(copies, stages, stage_elems, acc, token_tile, slice,
                                                                 range, k);
  } else if (warp_tiles == WarpTiles::kMost) {
    ba_gates_mma_k_loop<BLOCK, TOKENS, STAGES, WarpTiles::kMost>(copies, stages, stage_elems, acc, token_tile, slice,
                                                                 range, k);
  } else {
    ba_gates_mma_k_loop<BLOCK, TOKENS, STAGES, WarpTiles::kFewest>(copies, stages, stage_elems, acc, token_tile, slice,
                                                                   range, k);
  }
  async_copy_wait<0>();
  // Every warp is done reading the stages before the accumulator tile overwrites them.
  __syncthreads();
  for (unsigned int t = 0; t < WarpTiles::kMost; ++t) {
    const unsigned int tile = slice + t * Shape::kSlices;
    if (tile < out_tiles) {
      mma_store_row(acc_tile + token_tile * kMmaTile * kMmaAccLd + tile * kMmaTile, acc[t], kMmaAccLd);
    }
  }
  // Alone, a CTA's own tile is complete after a block barrier; in a cluster every rank's partial
  // tile must be stored before any rank sums them.
  if (splits == 1u) {
    __syncthreads();
  } else {
    cluster_sync();
  }
  const unsigned int row_begin = rank * TOKENS / splits;
  const unsigned int rows = (rank + 1u) * TOKENS / splits - row_begin;
  for (unsigned int i = threadIdx.x; i < rows * n; i += BLOCK) {
    const unsigned int row = row_begin + i / n;
    const unsigned int n_out = i % n;
    const unsigned int token = token0 + row;
    const unsigned int at = row * kMmaAccLd + n_out;
    float sum = 0.0f;
    if (splits == 1u) {
      sum = acc_tile[at];
    } else {
      for (unsigned int peer = 0; peer < splits; ++peer) {
        sum += reinterpret_cast<const float*>(cluster_peer_shared_memory(peer))[at];
      }
    }
    if (token < m) {
      ba_gates_store(sum, n_out, nv, vheads_per_group, a_log, dt_bias,
                     gate_out + static_cast<unsigned long long>(token) * gate_stride);
    }
  }
  if (splits != 1u) {
    // The peers read this CTA's tile until they pass here; it must outlive their reads.
    cluster_sync();
  }
}

}  // namespace kernels
}  // namespace metrale

// The shipped variants the host backend instantiates, one line per (kernel, block, lanes, groups,
// shape) a target file ships (src/host/builtin_kernel_registration.hpp defines the macro; NVRTC
// and the host JIT never see these lines).
#ifdef METRALE_HOST_KERNEL
METRALE_HOST_KERNEL("ssm_ba_gates_mma", 256, 128, 6, 0, metrale::kernels::ssm_ba_gates_mma<256, 128, 6>)
METRALE_HOST_KERNEL("ssm_ba_gates_mma", 256, 128, 6, 6, metrale::kernels::ssm_ba_gates_mma<256, 128, 6, 6>)
METRALE_HOST_KERNEL("ssm_ba_gates_mma", 256, 64, 3, 0, metrale::kernels::ssm_ba_gates_mma<256, 64, 3>)
#endif
