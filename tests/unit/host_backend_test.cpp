// Host backend: the GpuBackend contract (describe, load, argument and launch-shape checks,
// tracked memory) and the pure warp rules the scheduler applies.
#include "host/host_backend.hpp"

#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "data/host/host_test_support.hpp"
#include "host/launch_limits.hpp"
#include "host/warp_resolution.hpp"
#include "metrale/error.hpp"
#include "metrale/gpu/kernel_launch.hpp"

// clang-format off
#include "metrale/host/cuda_host_prelude.hpp"
#include "data/host/warp_collectives.cuh"
// clang-format on

using Catch::Matchers::Contains;
using metrale::BackendError;
using metrale::DevicePtr;
using metrale::HostBackend;
using metrale::HostBackendOptions;
using metrale::KernelLaunch;
using metrale::KernelParams;
using metrale::make_host_kernel;
using metrale::host::WarpOp;
using namespace metrale_test;

TEST_CASE("host backend: identity and options", "[host]") {
  HostBackendOptions options;
  options.worker_threads = 2;
  options.sm_count = 48;
  options.compute_capability = {12, 1};
  HostBackend gpu(options);
  CHECK(gpu.describe() == "host (2 worker threads, sm_count 48)");
  CHECK(gpu.device_key() == "host");
  CHECK_FALSE(gpu.needs_compiled_image());
  CHECK(gpu.sm_count() == 48U);
  CHECK(gpu.compute_capability() == metrale::ComputeCapability{12, 1});
  CHECK(HostBackend().sm_count() == 132U);
  options.fiber_stack_bytes = 1024;
  CHECK_THROWS_AS(HostBackend(options), BackendError);
}

TEST_CASE("host backend: load finds kernels by name and params, or names what is missing", "[host]") {
  HostBackend gpu;
  gpu.add_kernel(make_host_kernel<&warp_inclusive_scan>("scan", KernelParams{0, 32, 0}));
  const auto handle = load_kernel(gpu, "scan", {0, 32, 0});
  CHECK(handle.present());
  CHECK(load_kernel(gpu, "scan", {0, 32, 0}) == handle);
  CHECK_THROWS_WITH(load_kernel(gpu, "scan", {0, 64, 0}), Contains("'scan'") && Contains("l64"));
  CHECK_THROWS_WITH(load_kernel(gpu, "absent", {256, 64, 8}), Contains("'absent'") && Contains("b256l64g8"));
  CHECK_THROWS_AS(gpu.add_kernel(make_host_kernel<&warp_inclusive_scan>("scan", KernelParams{0, 32, 0})), BackendError);
}

TEST_CASE("host backend: arguments must match the kernel's parameters in count and size", "[host]") {
  HostBackend gpu;
  gpu.add_kernel(make_host_kernel<&warp_inclusive_scan>("scan", {}));
  const auto kernel = load_kernel(gpu, "scan");
  const DevicePtr buffer = upload(gpu, std::vector<int>(32, 1));
  CHECK_THROWS_WITH(KernelLaunch(gpu, kernel).grid({1, 1, 1}).block({32, 1, 1}).arg_ptr(buffer).launch(),
                    Contains("scan<default>") && Contains("takes 2 arguments, the launch passes 1"));
  CHECK_THROWS_WITH(KernelLaunch(gpu, kernel).grid({1, 1, 1}).block({32, 1, 1}).arg_ptr(buffer).arg_u32(7).launch(),
                    Contains("argument 1 is 4 bytes, the parameter is 8 bytes"));
  CHECK_THROWS_WITH(gpu.launch(metrale::KernelHandle{99}, {}, {}), Contains("unknown kernel handle 99"));
}

TEST_CASE("host backend: launch shapes outside CUDA's limits are refused", "[host]") {
  HostBackend gpu;
  gpu.add_kernel(make_host_kernel<&warp_inclusive_scan>("scan", {}));
  const auto kernel = load_kernel(gpu, "scan");
  const DevicePtr buffer = upload(gpu, std::vector<int>(2048, 1));
  auto launch = [&](metrale::Dim3 grid, metrale::Dim3 block, std::uint32_t shared = 0) {
    KernelLaunch(gpu, kernel).grid(grid).block(block).dynamic_shared(shared).arg_ptr(buffer).arg_ptr(buffer).launch();
  };
  CHECK_THROWS_WITH(launch({1, 1, 1}, {1056, 1, 1}), Contains("exceeds the limits"));
  CHECK_THROWS_WITH(launch({1, 1, 1}, {32, 1, 65}), Contains("exceeds the limits"));
  CHECK_THROWS_WITH(launch({1, 70000, 1}, {32, 1, 1}), Contains("grid (1,70000,1) exceeds"));
  CHECK_THROWS_WITH(launch({1, 1, 1}, {32, 1, 1}, 227 * 1024 + 128), Contains("dynamic shared memory"));
  CHECK_FALSE(metrale::host::launch_config_problem({{2, 3, 4}, {8, 8, 16}, 0, 0}, {9, 0}).has_value());
}

TEST_CASE("host backend: memory is tracked, copies and frees outside it are errors", "[host]") {
  HostBackend gpu;
  const DevicePtr a = gpu.alloc(1000);
  CHECK(a.address % 256 == 0);
  std::vector<std::uint8_t> bytes(1000, 7);
  gpu.copy_to_device(a, bytes.data(), 1000);
  gpu.copy_to_device(a.offset(990), bytes.data(), 10);
  CHECK_THROWS_WITH(gpu.copy_to_device(a.offset(990), bytes.data(), 11),
                    Contains("copy_to_device") && Contains("run 1 bytes past the end of the 1000-byte allocation"));
  CHECK_THROWS_WITH(gpu.copy_to_host(bytes.data(), a.offset(1000), 1),
                    Contains("copy_to_host") && Contains("not inside"));
  CHECK_THROWS_WITH(gpu.copy_to_host(bytes.data(), DevicePtr{8}, 4), Contains("not inside any allocation"));
  CHECK_THROWS_WITH(gpu.free(a.offset(8)), Contains("not the start of a live allocation"));
  CHECK_THROWS_AS(gpu.alloc(0), BackendError);
  gpu.free(a);
  CHECK_THROWS_AS(gpu.free(a), BackendError);
  CHECK_THROWS_AS(gpu.copy_to_device(a, bytes.data(), 4), BackendError);
  CHECK(gpu.live_allocations() == 0);
}

TEST_CASE("host warp rules: shuffle source lanes follow PTX shfl.sync", "[host]") {
  using metrale::host::shuffle_source_lane;
  // Full width: idx wraps mod 32, up/down keep their own value past the warp's edge.
  CHECK(shuffle_source_lane(WarpOp::kShflIdx, 5, 37, 32) == 5U);
  CHECK(shuffle_source_lane(WarpOp::kShflUp, 3, 4, 32) == 3U);
  CHECK(shuffle_source_lane(WarpOp::kShflUp, 7, 4, 32) == 3U);
  CHECK(shuffle_source_lane(WarpOp::kShflDown, 30, 4, 32) == 30U);
  CHECK(shuffle_source_lane(WarpOp::kShflXor, 6, 1, 32) == 7U);
  // 16-lane segments: every source stays in the caller's segment.
  CHECK(shuffle_source_lane(WarpOp::kShflIdx, 21, 3, 16) == 19U);
  CHECK(shuffle_source_lane(WarpOp::kShflUp, 17, 2, 16) == 17U);
  CHECK(shuffle_source_lane(WarpOp::kShflDown, 13, 3, 16) == 13U);
  CHECK(shuffle_source_lane(WarpOp::kShflDown, 17, 3, 16) == 20U);
  CHECK(shuffle_source_lane(WarpOp::kShflXor, 9, 8, 16) == 1U);
  // xor past the segment's top keeps the own value (PTX: j > maxLane), below it reads down.
  CHECK(shuffle_source_lane(WarpOp::kShflXor, 3, 16, 16) == 3U);
  CHECK(shuffle_source_lane(WarpOp::kShflXor, 19, 16, 16) == 3U);
}

TEST_CASE("host warp rules: requests are checked before they wait", "[host]") {
  metrale::host::WarpSyncRequest request;
  request.op = WarpOp::kShflXor;
  request.mask = 0xffff0000U;
  CHECK(metrale::host::warp_request_problem(request, 3).has_value());
  CHECK_FALSE(metrale::host::warp_request_problem(request, 20).has_value());
  request.width = 0;
  CHECK(metrale::host::warp_request_problem(request, 20).has_value());
  request.width = 64;
  CHECK(metrale::host::warp_request_problem(request, 20).has_value());
}

TEST_CASE("host prelude: intrinsics outside a launch are errors, not crashes", "[host]") {
  CHECK_THROWS_WITH(static_cast<void>(threadIdx.x), Contains("threadIdx used outside a host kernel launch"));
  CHECK_THROWS_AS(__syncthreads(), BackendError);
}

TEST_CASE("host prelude: arithmetic intrinsics", "[host]") {
  CHECK(__uint_as_float(0x3f800000U) == 1.0F);
  CHECK(__float_as_uint(-2.0F) == 0xc0000000U);
  CHECK(__fmaf_rn(1.0F + 0x1p-23F, 1.0F - 0x1p-23F, -1.0F) == -0x1p-46F);
  CHECK(max(3, 5U) == 5U);
  CHECK(min(-1.5F, 2) == -1.5F);
  CHECK(max(std::nanf(""), 1.0F) == 1.0F);
}
