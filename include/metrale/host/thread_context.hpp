// metrale/host/thread_context.hpp: what a kernel compiled for the host sees of "its" GPU
// thread: its coordinates and the two kinds of sync point (block barrier, warp collective).
// The prelude (cuda_host_prelude.hpp) maps threadIdx, __syncthreads, __shfl_*_sync, ... here.
// Invariants: the coordinates pointer is set by the block scheduler before every switch into a
// fiber and only read on that fiber's OS thread; a sync point never returns until the scheduler
// resolved it, and never throws into kernel code (a misuse is recorded and reported by launch()).
#pragma once

#include <vector_types.h>

#include <cstdint>
#include <source_location>
#include <string_view>

namespace metrale::host {

// The warp collectives, one per CUDA intrinsic family.
enum class WarpOp : std::uint8_t { kShflIdx, kShflUp, kShflDown, kShflXor, kBallot, kAny, kAll, kSyncWarp };

// "__shfl_xor_sync": the CUDA spelling, for error messages.
std::string_view warp_op_name(WarpOp op);

// One lane's arrival at a warp collective.
struct WarpSyncRequest {
  WarpOp op = WarpOp::kSyncWarp;
  std::uint32_t mask = 0;
  std::uint64_t value = 0;    // the lane's operand bits (shuffles), or its predicate (votes)
  std::int32_t lane_arg = 0;  // srcLane, delta or laneMask
  std::int32_t width = 32;
  std::source_location site;
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
void sync_threads(const std::source_location& site);

// A warp collective: waits until every lane the mask names arrived at this same site with the
// same mask and width; returns this lane's result bits.
std::uint64_t warp_sync(const WarpSyncRequest& request);

}  // namespace metrale::host
