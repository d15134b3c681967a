// host/warp_resolution.hpp: the pure rules by which a block's waiting threads move on: which
// warp collectives are complete, what each lane receives (PTX shfl.sync semantics), when a
// barrier releases, and, when nothing can move, why (the message a launch reports).
// Invariants: functions here only read and write the ThreadSync records they are given; they
// run while every fiber of the block is suspended, so no record changes under them.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "metrale/gpu/launch_config.hpp"
#include "metrale/host/thread_context.hpp"

namespace metrale::host {

inline constexpr std::uint32_t kWarpLanes = 32;

// kAtClusterBarrier: at cluster_sync(), which the block scheduler releases once every thread of
// the block is there (or exited) and the cluster's other blocks arrived (cluster_rendezvous.hpp).
enum class ThreadState : std::uint8_t { kRunnable, kAtBarrier, kAtWarpSync, kAtClusterBarrier, kExited };

// One GPU thread's position, as the scheduler sees it between switches.
struct ThreadSync {
  ThreadState state = ThreadState::kRunnable;
  WarpSyncRequest warp;               // meaningful in kAtWarpSync
  ::metrale::host::CallSite barrier;  // meaningful in kAtBarrier and kAtClusterBarrier
  bool vote = false;                  // kAtBarrier: the thread's __syncthreads_count predicate
  std::uint64_t result = 0;           // written when the warp collective or the barrier resolves
};

// "block_reduce.cuh:42": a call site, short enough for an error message.
std::string describe_site(const ::metrale::host::CallSite& site);

// "thread (5,1,0)": a thread by its threadIdx, from its linear index in the block.
std::string describe_thread(std::uint32_t linear, const Dim3& block_dim);

// Why a lane may not issue this request at all (bad width, mask without the lane), or nullopt.
std::optional<std::string> warp_request_problem(const WarpSyncRequest& request, std::uint32_t lane);

// The lane whose value `lane` receives from a shuffle (its own when the PTX rule says the source
// is outside its `width`-lane segment). `width` must be a power of two in [1, 32].
std::uint32_t shuffle_source_lane(WarpOp op, std::uint32_t lane, std::int32_t lane_arg, std::int32_t width);

struct WarpResolution {
  bool progress = false;
  std::optional<std::string> error;  // a resolved shuffle read a lane outside its mask
};

// Resolves every warp collective whose named lanes all arrived at the same site with the same
// op, mask and width: writes their results and makes them runnable. In a warp where none did,
// the lanes at one kActiveMask site are released together, each with their mask.
WarpResolution resolve_warp_collectives(std::span<ThreadSync> threads, const Dim3& block_dim);

// Releases the barrier when every thread of the block waits at the same __syncthreads site; each
// thread's result is then the number of threads that voted (__syncthreads_count).
bool release_barrier(std::span<ThreadSync> threads);

// Every thread that has not exited waits at the same cluster_sync() site, and one at least: the
// block may arrive at its cluster's barrier.
bool block_at_cluster_barrier(std::span<const ThreadSync> threads);

// Makes the threads waiting at the cluster barrier runnable (the cluster passed it).
void release_cluster_barrier(std::span<ThreadSync> threads);

// Every thread is exited or waiting and nothing resolves: names the first waiting thread and
// the thread that keeps it waiting (exited, or at another barrier or collective).
std::string diagnose_stuck_block(std::span<const ThreadSync> threads, const Dim3& block_dim);

}  // namespace metrale::host
