// metrale/host/tile_collectives.hpp: the host backend's PTX wmma (m16n16k16, bf16 inputs, fp32
// accumulators), as warp collectives over whole 16x16 tiles. templates/metrale_arith.cuh calls
// these where the device runs inline PTX.
// Invariants:
// - each function is one warp collective: all 32 lanes call it at the same site, and the body
//   runs once for the warp, with every lane's operands (as .sync.aligned requires on the GPU);
// - the tile pointer and ldm must be the same on every lane, the pointer 32-byte aligned and
//   ldm a whole number of 16-byte rows; otherwise the launch fails naming the rule;
// - what one lane's fragment holds is private to this emulation: only these functions read or
//   write fragments, so a kernel that would need the GPU's per-lane layout cannot agree with
//   itself here (the element order is a documented implementation detail of the .cpp);
// - a product of two bf16 is exact in fp32; D = C + sum over k in order 0..15 with fmaf, so a
//   host run is deterministic (the GPU's order is unspecified; tests bound the difference).
#pragma once

#include <cstdint>

#include "metrale/host/thread_context.hpp"

namespace metrale::host {

// A lane's share of a 16x16 bf16 operand tile: 8 elements packed two per word.
using TileBf16Fragment = std::uint32_t[4];
// A lane's share of a 16x16 fp32 accumulator tile: 8 elements.
using TileF32Fragment = float[8];

// wmma.load.a.sync.aligned.row.m16n16k16.bf16: A[r][c] = tile[r * ldm + c].
void tile_load_a_bf16_row(TileBf16Fragment& a, const void* tile, std::uint32_t ldm,
                          ::metrale::host::CallSite site = ::metrale::host::CallSite::current());

// wmma.load.b.sync.aligned.col.m16n16k16.bf16: B[k][n] = tile[n * ldm + k].
void tile_load_b_bf16_col(TileBf16Fragment& b, const void* tile, std::uint32_t ldm,
                          ::metrale::host::CallSite site = ::metrale::host::CallSite::current());

// wmma.mma.sync.aligned.row.col.m16n16k16.f32.bf16.bf16.f32: D = A B + C (d may alias c).
void tile_mma_bf16_f32(TileF32Fragment& d, const TileBf16Fragment& a, const TileBf16Fragment& b,
                       const TileF32Fragment& c, ::metrale::host::CallSite site = ::metrale::host::CallSite::current());

// wmma.store.d.sync.aligned.row.m16n16k16.f32: tile[r * ldm + c] = D[r][c].
void tile_store_f32_row(float* tile, const TileF32Fragment& d, std::uint32_t ldm,
                        ::metrale::host::CallSite site = ::metrale::host::CallSite::current());

// The counting hook: called exactly once per emulated 16x16x16 MMA (2 * 16^3 FLOP), by the
// collective's body. It feeds tile_mma_count(); a FLOP/profile recorder hooks in here.
void record_tile_mma();

// 16x16x16 MMAs emulated by this process so far (all threads).
std::uint64_t tile_mma_count();

}  // namespace metrale::host
