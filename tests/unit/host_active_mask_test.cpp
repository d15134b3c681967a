// host_active_mask_test.cpp: the rule behind coalesced_threads() (WarpOp::kActiveMask,
// src/host/warp_resolution.hpp): the lanes of a warp waiting at one kActiveMask site are released
// together, each with their mask, but only once no other collective of that warp can complete,
// so lanes another collective releases still join; a request must name the whole warp.
#include <catch2/catch.hpp>
#include <vector>

#include "host/warp_resolution.hpp"

using metrale::host::CallSite;
using metrale::host::ThreadState;
using metrale::host::ThreadSync;
using metrale::host::WarpOp;

namespace {

ThreadSync waiting(WarpOp op, unsigned mask, const CallSite& site, unsigned value = 0, int lane_arg = 0) {
  ThreadSync thread;
  thread.state = ThreadState::kAtWarpSync;
  thread.warp.op = op;
  thread.warp.mask = mask;
  thread.warp.value = value;
  thread.warp.lane_arg = lane_arg;
  thread.warp.site = site;
  thread.result = 0xdeadbeefU;  // poison: a resolved lane overwrites it
  return thread;
}

}  // namespace

TEST_CASE("host warp rules: an active mask groups a warp's lanes by site, after its other collectives", "[host][cg]") {
  const CallSite site_a = CallSite::current("kernel.cuh", 10, 3);
  const CallSite site_b = CallSite::current("kernel.cuh", 20, 3);
  const CallSite shuffle = CallSite::current("kernel.cuh", 30, 3);
  std::vector<ThreadSync> threads(40);
  // Warp 0: lanes 0-9 at site A, 10-19 at site B, 20-31 exited.
  for (unsigned lane = 0; lane < 32; ++lane) {
    if (lane < 20) {
      threads[lane] = waiting(WarpOp::kActiveMask, 0xffffffffU, lane < 10 ? site_a : site_b);
    } else {
      threads[lane].state = ThreadState::kExited;
    }
  }
  // Warp 1 (8 lanes): lanes 0-3 at a complete xor shuffle, lanes 4-7 at site A.
  for (unsigned lane = 0; lane < 8; ++lane) {
    threads[32 + lane] = lane < 4 ? waiting(WarpOp::kShflXor, 0xfU, shuffle, 100 + lane, 1)
                                  : waiting(WarpOp::kActiveMask, 0xffffffffU, site_a);
  }
  const metrale::Dim3 block{40, 1, 1};
  const auto first = metrale::host::resolve_warp_collectives(threads, block);
  REQUIRE_FALSE(first.error);
  CHECK(first.progress);
  for (unsigned lane = 0; lane < 20; ++lane) {
    INFO("warp 0 lane " << lane);
    CHECK(threads[lane].state == ThreadState::kRunnable);
    CHECK(threads[lane].result == (lane < 10 ? 0x3ffU : 0xffc00U));
  }
  for (unsigned lane = 0; lane < 4; ++lane) {
    CHECK(threads[32 + lane].state == ThreadState::kRunnable);
    CHECK(threads[32 + lane].result == 100 + (lane ^ 1U));
  }
  // The shuffle's lanes might still reach site A: warp 1's active mask waits for the next pass.
  for (unsigned lane = 4; lane < 8; ++lane) {
    CHECK(threads[32 + lane].state == ThreadState::kAtWarpSync);
  }
  threads[32] = waiting(WarpOp::kActiveMask, 0xffffffffU, site_a);  // lane 0 of warp 1 joins
  const auto second = metrale::host::resolve_warp_collectives(threads, block);
  REQUIRE_FALSE(second.error);
  CHECK(second.progress);
  CHECK(threads[32].result == 0xf1U);
  for (unsigned lane = 4; lane < 8; ++lane) {
    CHECK(threads[32 + lane].state == ThreadState::kRunnable);
    CHECK(threads[32 + lane].result == 0xf1U);
  }
}

TEST_CASE("host warp rules: an active-mask request must name the whole warp", "[host][cg]") {
  metrale::host::WarpSyncRequest request;
  request.op = WarpOp::kActiveMask;
  request.mask = 0xffffffffU;
  CHECK_FALSE(metrale::host::warp_request_problem(request, 7).has_value());
  request.mask = 0x000000ffU;
  const auto problem = metrale::host::warp_request_problem(request, 7);
  REQUIRE(problem.has_value());
  CHECK_THAT(*problem, Catch::Contains("__activemask") && Catch::Contains("whole warp"));
}
