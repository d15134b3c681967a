// metrale/host/thread_context.hpp: what a kernel compiled for the host sees of "its" GPU
// thread: its coordinates and the two kinds of sync point (block barrier, warp collective),
// and the warp collectives over whole 16x16 tiles that stand for PTX wmma (below).
// The prelude (cuda_host_prelude.hpp) maps threadIdx, __syncthreads, __shfl_*_sync, ... here.
// Invariants: the coordinates pointer is set by the block scheduler before every switch into a
// fiber and only read on that fiber's OS thread; a sync point never returns until the scheduler
// resolved it, and never throws into kernel code (a misuse is recorded and reported by launch()).
#pragma once

#include <vector_types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace metrale::host {

// GCC 12 has no __builtin_COLUMN; there two sync points on one line share a site.
#if defined(__has_builtin) && __has_builtin(__builtin_COLUMN)
#define METRALE_HOST_CALL_COLUMN __builtin_COLUMN()
#else
#define METRALE_HOST_CALL_COLUMN 0U
#endif

// Where a sync intrinsic was called, for error messages and for telling two barriers apart.
// ::metrale::host::CallSite would do, but clang 14 (the fuzz and clang-tidy builds) does not provide
// it with libstdc++ 12; these builtins exist in both compilers.
class CallSite {
 public:
  static constexpr CallSite current(const char* file = __builtin_FILE(), unsigned line = __builtin_LINE(),
                                    unsigned column = METRALE_HOST_CALL_COLUMN) {
    return CallSite(file, line, column);
  }
  constexpr CallSite() = default;
  [[nodiscard]] constexpr const char* file_name() const { return file_; }
  [[nodiscard]] constexpr unsigned line() const { return line_; }
  [[nodiscard]] constexpr unsigned column() const { return column_; }

 private:
  constexpr CallSite(const char* file, unsigned line, unsigned column) : file_(file), line_(line), column_(column) {}
  const char* file_ = "";
  unsigned line_ = 0;
  unsigned column_ = 0;
};

// The warp collectives, one per CUDA intrinsic family; kTile is a whole-warp matrix-tile
// operation (the wmma emulation, metrale/host/thread_context.hpp).
enum class WarpOp : std::uint8_t { kShflIdx, kShflUp, kShflDown, kShflXor, kBallot, kAny, kAll, kSyncWarp, kTile };

// A kTile collective's body: runs once, when all 32 lanes arrived, with each lane's operand
// pointer (WarpSyncRequest::value) in lane order; returns "" or what the warp did wrong.
using TileCollectiveFn = std::string (*)(void* const* lane_operands);

// "__shfl_xor_sync": the CUDA spelling, for error messages.
std::string_view warp_op_name(WarpOp op);

// One lane's arrival at a warp collective.
struct WarpSyncRequest {
  WarpOp op = WarpOp::kSyncWarp;
  std::uint32_t mask = 0;
  std::uint64_t value = 0;    // the lane's operand bits (shuffles), or its predicate (votes)
  std::int32_t lane_arg = 0;  // srcLane, delta or laneMask
  std::int32_t width = 32;
  ::metrale::host::CallSite site;
  TileCollectiveFn tile = nullptr;  // kTile only; part of the collective's identity
};

namespace detail {

struct FiberCoordinates {
  uint3 thread_idx{};
  uint3 block_idx{};
  dim3 block_dim{};
  dim3 grid_dim{};
};

// The running fiber's coordinates; null outside a host kernel launch.
inline thread_local const FiberCoordinates* current_coordinates = nullptr;

[[noreturn]] void outside_kernel(const char* what);

inline const FiberCoordinates& coordinates(const char* what) {
  const FiberCoordinates* coords = current_coordinates;
  if (coords == nullptr) {
    outside_kernel(what);
  }
  return *coords;
}

}  // namespace detail

// The running block's dynamic shared memory (`extern __shared__` on a GPU): the launch's
// dynamic_shared_bytes, 128-byte aligned, filled with 0xCD at block start (a GPU leaves it
// undefined, so a kernel that reads before writing sees garbage here too). A launch that asked
// for none makes this an error naming the kernel's mistake.
unsigned char* dynamic_shared_memory();

// __syncthreads(): waits until every thread of the block reached the barrier at this same site.
void sync_threads(const ::metrale::host::CallSite& site);

// A warp collective: waits until every lane the mask names arrived at this same site with the
// same mask and width; returns this lane's result bits.
std::uint64_t warp_sync(const WarpSyncRequest& request);

// ---- tile collectives: the host backend's PTX wmma ----
// m16n16k16, bf16 inputs, fp32 accumulators, as warp collectives over whole 16x16 tiles;
// templates/metrale_arith.cuh calls these where the device runs inline PTX. Invariants:
// - each function is one warp collective: all 32 lanes call it at the same site, and the body
//   runs once for the warp, with every lane's operands (as .sync.aligned requires on the GPU);
// - the tile pointer and ldm must be the same on every lane, the pointer 32-byte aligned and
//   ldm a whole number of 16-byte rows; otherwise the launch fails naming the rule;
// - what one lane's fragment holds is private to this emulation: only these functions read or
//   write fragments, so a kernel that would need the GPU's per-lane layout cannot agree with
//   itself here (the element order is a documented implementation detail of tile_collectives.cpp);
// - a product of two bf16 is exact in fp32; D = C + sum over k in order 0..15 with fmaf, so a
//   host run is deterministic (the GPU's order is unspecified; tests bound the difference).

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

// ---- profile counters ----
// The arithmetic a profiled host kernel does, counted where the templates already funnel it:
// the prelude's intrinsics (__fmaf_rn, ...), the special functions and the warp collectives.
// The prelude calls count() only in profiled translation units (METRALE_HOST_PROFILED);
// elsewhere its intrinsics count nothing and cost nothing. Invariant: count() is a no-op on an
// OS thread that is not running a profiled block.
namespace metrale::host::profile {

enum class Op : std::uint8_t {
  kFma,      // __fmaf_rn: 2 FLOPs
  kAdd,      // __fadd_rn
  kMul,      // __fmul_rn
  kDiv,      // __fdiv_rn, __fdividef, __frcp_rn
  kSpecial,  // expf, log1pf, __expf, rsqrtf, ...: the special-function unit's work
  kShuffle,  // one lane's __shfl_*_sync
  kVote,     // one lane's __ballot_sync / __any_sync / __all_sync
  kTileMma,  // one warp's 16x16x16 tensor-core MMA (tile_mma_bf16_f32): 2 * 16^3 FLOPs
};
inline constexpr std::size_t kOpKinds = 8;

void count(Op op) noexcept;

// The asynchronous copies (templates/metrale_arith.cuh's cp.async wrappers), for the cost
// model's pipeline-latency term: the host copies at once, but records what a GPU thread would
// keep in flight. async_copy: `bytes` issued into the thread's open group (only copies that read
// memory: a zero-fill reads none); async_commit: the open group closes; async_wait: the thread
// waits until at most `pending` committed groups remain. Called only from profiled units, and
// no-ops on an OS thread that is not running a profiled block, like count().
void async_copy(std::uint32_t bytes) noexcept;
void async_commit() noexcept;
void async_wait(std::uint32_t pending) noexcept;

}  // namespace metrale::host::profile
