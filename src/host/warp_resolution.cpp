// host/warp_resolution.cpp: completes warp collectives and barriers, and explains a stuck block.
// The source-lane rule follows the PTX ISA's shfl.sync pseudocode with the c operand CUDA's
// intrinsics pass for a width w: segment = the w-lane group holding the lane; up reads lane-b if
// still in the segment, down lane+b, xor lane^b if not above the segment, idx the segment's lane
// (b mod w); otherwise the lane keeps its own value.
// Past ~400 lines: every warp collective (shuffle, vote, match, reduction, tile and group
// sync), both barriers and the stuck-block diagnosis read the same view of a block's parked
// lanes; kept together so a collective is completed and explained by one set of rules.
#include "warp_resolution.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace metrale::host {
namespace {

bool same_site(const ::metrale::host::CallSite& a, const ::metrale::host::CallSite& b) {
  return a.line() == b.line() && a.column() == b.column() &&
         (a.file_name() == b.file_name() || std::strcmp(a.file_name(), b.file_name()) == 0);
}

bool same_collective(const WarpSyncRequest& a, const WarpSyncRequest& b) {
  return a.op == b.op && a.mask == b.mask && a.width == b.width && a.tile == b.tile && same_site(a.site, b.site);
}

std::string describe_request(const WarpSyncRequest& request) {
  return fmt::format("{} at {} (mask {:#010x}, width {})", warp_op_name(request.op), describe_site(request.site),
                     request.mask, request.width);
}

struct Warp {
  std::span<ThreadSync> lanes;
  std::uint32_t first_thread;
};

Warp warp_of(std::span<ThreadSync> threads, std::uint32_t warp) {
  const std::uint32_t first = warp * kWarpLanes;
  const auto count = std::min<std::size_t>(kWarpLanes, threads.size() - first);
  return Warp{threads.subspan(first, count), first};
}

// The lanes `mask` names are all present and waiting at `request`'s collective.
bool group_complete(const Warp& warp, const WarpSyncRequest& request) {
  for (std::uint32_t lane = 0; lane < kWarpLanes; ++lane) {
    if ((request.mask >> lane & 1U) == 0) {
      continue;
    }
    if (lane >= warp.lanes.size()) {
      return false;
    }
    const ThreadSync& other = warp.lanes[lane];
    if (other.state != ThreadState::kAtWarpSync || !same_collective(other.warp, request)) {
      return false;
    }
  }
  return true;
}

// A tile collective names the whole warp; its body sees every lane's operand at once.
std::optional<std::string> complete_tile(Warp& warp, const Dim3& block_dim) {
  const WarpSyncRequest request = warp.lanes.front().warp;
  void* operands[kWarpLanes] = {};
  for (std::uint32_t lane = 0; lane < kWarpLanes; ++lane) {
    operands[lane] = reinterpret_cast<void*>(static_cast<std::uintptr_t>(warp.lanes[lane].warp.value));
  }
  std::string problem = request.tile(operands);
  if (!problem.empty()) {
    return fmt::format("{}: {} at {}: {}", describe_thread(warp.first_thread, block_dim), warp_op_name(request.op),
                       describe_site(request.site), problem);
  }
  for (ThreadSync& lane : warp.lanes) {
    lane.result = 0;
    lane.state = ThreadState::kRunnable;
  }
  return std::nullopt;
}

bool is_reduction(WarpOp op) {
  return op == WarpOp::kReduceAdd || op == WarpOp::kReduceMin || op == WarpOp::kReduceMax || op == WarpOp::kReduceAnd ||
         op == WarpOp::kReduceOr || op == WarpOp::kReduceXor;
}

// __reduce_*_sync over the lanes the mask names: 32-bit operands, min/max signed when lane_arg is 1.
std::uint64_t reduce_lanes(const Warp& warp, const WarpSyncRequest& request) {
  const bool is_signed = request.lane_arg == 1;
  bool first = true;
  std::uint32_t acc = 0;
  for (std::uint32_t lane = 0; lane < warp.lanes.size(); ++lane) {
    if ((request.mask >> lane & 1U) == 0) {
      continue;
    }
    const auto v = static_cast<std::uint32_t>(warp.lanes[lane].warp.value);
    if (first) {
      acc = v;
      first = false;
      continue;
    }
    switch (request.op) {
      case WarpOp::kReduceAdd:
        acc += v;
        break;
      case WarpOp::kReduceMin:
        acc = is_signed
                  ? static_cast<std::uint32_t>(std::min(static_cast<std::int32_t>(acc), static_cast<std::int32_t>(v)))
                  : std::min(acc, v);
        break;
      case WarpOp::kReduceMax:
        acc = is_signed
                  ? static_cast<std::uint32_t>(std::max(static_cast<std::int32_t>(acc), static_cast<std::int32_t>(v)))
                  : std::max(acc, v);
        break;
      case WarpOp::kReduceAnd:
        acc &= v;
        break;
      case WarpOp::kReduceOr:
        acc |= v;
        break;
      default:  // kReduceXor
        acc ^= v;
        break;
    }
  }
  return acc;
}

std::optional<std::string> complete_group(Warp& warp, std::uint32_t leader, const Dim3& block_dim) {
  const WarpSyncRequest request = warp.lanes[leader].warp;
  if (request.op == WarpOp::kTile) {
    return complete_tile(warp, block_dim);
  }
  std::uint32_t votes = 0;
  for (std::uint32_t lane = 0; lane < warp.lanes.size(); ++lane) {
    if ((request.mask >> lane & 1U) != 0 && warp.lanes[lane].warp.value != 0) {
      votes |= 1U << lane;
    }
  }
  const std::uint64_t reduced = is_reduction(request.op) ? reduce_lanes(warp, request) : 0;
  for (std::uint32_t lane = 0; lane < warp.lanes.size(); ++lane) {
    if ((request.mask >> lane & 1U) == 0) {
      continue;
    }
    ThreadSync& thread = warp.lanes[lane];
    switch (request.op) {
      case WarpOp::kShflIdx:
      case WarpOp::kShflUp:
      case WarpOp::kShflDown:
      case WarpOp::kShflXor: {
        const std::uint32_t source = shuffle_source_lane(request.op, lane, thread.warp.lane_arg, request.width);
        if ((request.mask >> source & 1U) == 0) {
          return fmt::format("{} (lane {}) at {} reads lane {}, which the mask {:#010x} does not name",
                             describe_thread(warp.first_thread + lane, block_dim), lane, describe_request(thread.warp),
                             source, request.mask);
        }
        thread.result = warp.lanes[source].warp.value;
        break;
      }
      case WarpOp::kBallot:
        thread.result = votes;
        break;
      case WarpOp::kAny:
        thread.result = votes != 0 ? 1U : 0U;
        break;
      case WarpOp::kAll:
        thread.result = votes == request.mask ? 1U : 0U;
        break;
      case WarpOp::kMatchAny:
      case WarpOp::kMatchAll: {
        std::uint32_t same = 0;
        for (std::uint32_t other = 0; other < warp.lanes.size(); ++other) {
          if ((request.mask >> other & 1U) != 0 && warp.lanes[other].warp.value == thread.warp.value) {
            same |= 1U << other;
          }
        }
        thread.result = request.op == WarpOp::kMatchAny || same == request.mask ? same : 0U;
        break;
      }
      case WarpOp::kReduceAdd:
      case WarpOp::kReduceMin:
      case WarpOp::kReduceMax:
      case WarpOp::kReduceAnd:
      case WarpOp::kReduceOr:
      case WarpOp::kReduceXor:
        thread.result = reduced;
        break;
      case WarpOp::kSyncWarp:
      case WarpOp::kTile:
      case WarpOp::kActiveMask:  // resolved by resolve_active_masks, never here
        thread.result = 0;
        break;
    }
  }
  for (std::uint32_t lane = 0; lane < warp.lanes.size(); ++lane) {
    if ((request.mask >> lane & 1U) != 0) {
      warp.lanes[lane].state = ThreadState::kRunnable;
    }
  }
  return std::nullopt;
}

// The lanes of `warp` waiting at kActiveMask, grouped by site: each group is released with its
// own mask. Called only when no other collective of the warp completed, so every lane that can
// still reach a site with the others (it was released by a collective of this pass) has.
bool resolve_active_masks(Warp& warp) {
  bool progress = false;
  for (std::uint32_t lane = 0; lane < warp.lanes.size(); ++lane) {
    const ThreadSync& first = warp.lanes[lane];
    if (first.state != ThreadState::kAtWarpSync || first.warp.op != WarpOp::kActiveMask) {
      continue;
    }
    const WarpSyncRequest request = first.warp;
    std::uint32_t mask = 0;
    for (std::uint32_t other = lane; other < warp.lanes.size(); ++other) {
      const ThreadSync& thread = warp.lanes[other];
      mask |= thread.state == ThreadState::kAtWarpSync && same_collective(thread.warp, request) ? 1U << other : 0U;
    }
    for (std::uint32_t other = lane; other < warp.lanes.size(); ++other) {
      if ((mask >> other & 1U) != 0) {
        warp.lanes[other].result = mask;
        warp.lanes[other].state = ThreadState::kRunnable;
      }
    }
    progress = true;
  }
  return progress;
}

std::string why_lane_is_missing(std::span<const ThreadSync> threads, std::uint32_t thread_index) {
  if (thread_index >= threads.size()) {
    return fmt::format("does not exist (the block has {} threads)", threads.size());
  }
  const ThreadSync& other = threads[thread_index];
  switch (other.state) {
    case ThreadState::kExited:
      return "exited";
    case ThreadState::kAtBarrier:
      return fmt::format("waits at __syncthreads() at {}", describe_site(other.barrier));
    case ThreadState::kAtWarpSync:
      return fmt::format("waits at a different collective: {}", describe_request(other.warp));
    case ThreadState::kAtClusterBarrier:
      return fmt::format("waits at cluster_sync() at {}", describe_site(other.barrier));
    case ThreadState::kRunnable:
      break;
  }
  return "is still running";
}

}  // namespace

std::string_view warp_op_name(WarpOp op) {
  switch (op) {
    case WarpOp::kShflIdx:
      return "__shfl_sync";
    case WarpOp::kShflUp:
      return "__shfl_up_sync";
    case WarpOp::kShflDown:
      return "__shfl_down_sync";
    case WarpOp::kShflXor:
      return "__shfl_xor_sync";
    case WarpOp::kBallot:
      return "__ballot_sync";
    case WarpOp::kAny:
      return "__any_sync";
    case WarpOp::kAll:
      return "__all_sync";
    case WarpOp::kSyncWarp:
      return "__syncwarp";
    case WarpOp::kTile:
      return "wmma tile operation";
    case WarpOp::kActiveMask:
      return "__activemask";
    case WarpOp::kMatchAny:
      return "__match_any_sync";
    case WarpOp::kMatchAll:
      return "__match_all_sync";
    case WarpOp::kReduceAdd:
      return "__reduce_add_sync";
    case WarpOp::kReduceMin:
      return "__reduce_min_sync";
    case WarpOp::kReduceMax:
      return "__reduce_max_sync";
    case WarpOp::kReduceAnd:
      return "__reduce_and_sync";
    case WarpOp::kReduceOr:
      return "__reduce_or_sync";
    case WarpOp::kReduceXor:
      return "__reduce_xor_sync";
  }
  return "warp collective";
}

std::string describe_site(const ::metrale::host::CallSite& site) {
  std::string_view file = site.file_name();
  if (const auto slash = file.rfind('/'); slash != std::string_view::npos) {
    file.remove_prefix(slash + 1);
  }
  return fmt::format("{}:{}", file, site.line());
}

std::string describe_thread(std::uint32_t linear, const Dim3& block_dim) {
  const std::uint32_t x = linear % block_dim.x;
  const std::uint32_t y = linear / block_dim.x % block_dim.y;
  const std::uint32_t z = linear / (block_dim.x * block_dim.y);
  return fmt::format("thread ({},{},{})", x, y, z);
}

std::optional<std::string> warp_request_problem(const WarpSyncRequest& request, std::uint32_t lane) {
  const std::int32_t width = request.width;
  if (width < 1 || width > static_cast<std::int32_t>(kWarpLanes) || (width & (width - 1)) != 0) {
    return fmt::format("{} at {} has width {}; it must be a power of two in [1, 32]", warp_op_name(request.op),
                       describe_site(request.site), width);
  }
  if (request.op == WarpOp::kTile && (request.mask != 0xffffffffU || request.tile == nullptr)) {
    return fmt::format("{} at {} must be executed by the whole warp (mask {:#010x})", warp_op_name(request.op),
                       describe_site(request.site), request.mask);
  }
  if (request.op == WarpOp::kActiveMask && request.mask != 0xffffffffU) {
    return fmt::format("{} at {} must name the whole warp as its candidates (mask {:#010x})", warp_op_name(request.op),
                       describe_site(request.site), request.mask);
  }
  if ((request.mask >> lane & 1U) == 0) {
    return fmt::format("{} at {} is called by lane {} with mask {:#010x}, which does not name the calling lane",
                       warp_op_name(request.op), describe_site(request.site), lane, request.mask);
  }
  return std::nullopt;
}

std::uint32_t shuffle_source_lane(WarpOp op, std::uint32_t lane, std::int32_t lane_arg, std::int32_t width) {
  const auto w = static_cast<std::int64_t>(width);
  const auto self = static_cast<std::int64_t>(lane);
  const std::int64_t min_lane = self & ~(w - 1);
  const std::int64_t max_lane = min_lane + w - 1;
  std::int64_t source = self;
  switch (op) {
    case WarpOp::kShflIdx:
      source = min_lane | (lane_arg & (w - 1));
      break;
    case WarpOp::kShflUp:
      source = self - lane_arg;
      source = source >= min_lane ? source : self;
      break;
    case WarpOp::kShflDown:
      source = self + lane_arg;
      source = source <= max_lane ? source : self;
      break;
    case WarpOp::kShflXor:
      source = self ^ lane_arg;
      source = source <= max_lane && source >= 0 ? source : self;
      break;
    default:
      break;
  }
  return static_cast<std::uint32_t>(source);
}

WarpResolution resolve_warp_collectives(std::span<ThreadSync> threads, const Dim3& block_dim) {
  WarpResolution out;
  const auto warps = static_cast<std::uint32_t>((threads.size() + kWarpLanes - 1) / kWarpLanes);
  for (std::uint32_t w = 0; w < warps; ++w) {
    Warp warp = warp_of(threads, w);
    bool warp_progress = false;
    for (std::uint32_t lane = 0; lane < warp.lanes.size(); ++lane) {
      const ThreadSync& thread = warp.lanes[lane];
      if (thread.state != ThreadState::kAtWarpSync || thread.warp.op == WarpOp::kActiveMask ||
          !group_complete(warp, thread.warp)) {
        continue;
      }
      if (auto error = complete_group(warp, lane, block_dim)) {
        out.error = std::move(error);
        return out;
      }
      warp_progress = true;
    }
    // Convergence is decided last: lanes a collective just released may still join a group.
    warp_progress = warp_progress || resolve_active_masks(warp);
    out.progress = out.progress || warp_progress;
  }
  return out;
}

bool release_barrier(std::span<ThreadSync> threads) {
  if (threads.empty() || threads.front().state != ThreadState::kAtBarrier) {
    return false;
  }
  const ::metrale::host::CallSite& site = threads.front().barrier;
  const bool all_there = std::all_of(threads.begin(), threads.end(), [&](const ThreadSync& thread) {
    return thread.state == ThreadState::kAtBarrier && same_site(thread.barrier, site);
  });
  if (all_there) {
    const auto votes = static_cast<std::uint64_t>(
        std::count_if(threads.begin(), threads.end(), [](const ThreadSync& t) { return t.vote; }));
    for (ThreadSync& thread : threads) {
      thread.state = ThreadState::kRunnable;
      thread.result = votes;
    }
  }
  return all_there;
}

bool block_at_cluster_barrier(std::span<const ThreadSync> threads) {
  const ThreadSync* first = nullptr;
  for (const ThreadSync& thread : threads) {
    if (thread.state == ThreadState::kExited) {
      continue;
    }
    if (thread.state != ThreadState::kAtClusterBarrier ||
        (first != nullptr && !same_site(first->barrier, thread.barrier))) {
      return false;
    }
    first = first == nullptr ? &thread : first;
  }
  return first != nullptr;
}

void release_cluster_barrier(std::span<ThreadSync> threads) {
  for (ThreadSync& thread : threads) {
    if (thread.state == ThreadState::kAtClusterBarrier) {
      thread.state = ThreadState::kRunnable;
    }
  }
}

std::string diagnose_stuck_block(std::span<const ThreadSync> threads, const Dim3& block_dim) {
  const auto count = static_cast<std::uint32_t>(threads.size());
  for (std::uint32_t t = 0; t < count; ++t) {
    if (threads[t].state != ThreadState::kAtWarpSync) {
      continue;
    }
    const WarpSyncRequest& request = threads[t].warp;
    const std::uint32_t first = t / kWarpLanes * kWarpLanes;
    for (std::uint32_t lane = 0; lane < kWarpLanes; ++lane) {
      const std::uint32_t other = first + lane;
      if ((request.mask >> lane & 1U) == 0 || (other < count && threads[other].state == ThreadState::kAtWarpSync &&
                                               same_collective(threads[other].warp, request))) {
        continue;
      }
      const std::string missing = other < count ? fmt::format("lane {} ({})", lane, describe_thread(other, block_dim))
                                                : fmt::format("lane {}", lane);
      return fmt::format("{} (lane {}) waits at {}, but {} {}; on a GPU this hangs or reads an undefined value",
                         describe_thread(t, block_dim), t - first, describe_request(request), missing,
                         why_lane_is_missing(threads, other));
    }
  }
  // A block barrier first, then a cluster barrier: an exited thread keeps the first waiting,
  // not the second (it counts as arrived at a cluster barrier).
  for (const ThreadState waiting : {ThreadState::kAtBarrier, ThreadState::kAtClusterBarrier}) {
    const char* name = waiting == ThreadState::kAtBarrier ? "__syncthreads()" : "cluster_sync()";
    for (std::uint32_t t = 0; t < count; ++t) {
      if (threads[t].state != waiting) {
        continue;
      }
      for (std::uint32_t other = 0; other < count; ++other) {
        const ThreadSync& missing = threads[other];
        if ((missing.state == waiting && same_site(missing.barrier, threads[t].barrier)) ||
            (missing.state == ThreadState::kExited && waiting == ThreadState::kAtClusterBarrier)) {
          continue;
        }
        const std::string why = missing.state == ThreadState::kExited ? std::string("exited without reaching it")
                                : missing.state == waiting
                                    ? fmt::format("waits at a different {} at {}", name, describe_site(missing.barrier))
                                    : why_lane_is_missing(threads, other);
        return fmt::format("{} waits at {} at {}, but {} {}; on a GPU this hangs or is undefined",
                           describe_thread(t, block_dim), name, describe_site(threads[t].barrier),
                           describe_thread(other, block_dim), why);
      }
    }
  }
  return "the block stopped making progress with no thread waiting (internal error)";
}

}  // namespace metrale::host
