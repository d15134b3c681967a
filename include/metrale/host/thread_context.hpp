// metrale/host/thread_context.hpp: what a kernel compiled for the host sees of "its" GPU
// thread: its coordinates and the two kinds of sync point (block barrier, warp collective).
// The prelude (cuda_host_prelude.hpp) maps threadIdx, __syncthreads, __shfl_*_sync, ... here.
// Invariants: the coordinates pointer is set by the block scheduler before every switch into a
// fiber and only read on that fiber's OS thread; a sync point never returns until the scheduler
// resolved it, and never throws into kernel code (a misuse is recorded and reported by launch()).
#pragma once

#include <vector_types.h>

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
// operation (the wmma emulation, metrale/host/tile_collectives.hpp).
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

// __syncthreads(): waits until every thread of the block reached the barrier at this same site.
void sync_threads(const ::metrale::host::CallSite& site);

// A warp collective: waits until every lane the mask names arrived at this same site with the
// same mask and width; returns this lane's result bits.
std::uint64_t warp_sync(const WarpSyncRequest& request);

}  // namespace metrale::host
