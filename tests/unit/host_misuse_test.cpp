// Host backend: what a GPU would hide (divergent barriers, shuffles naming absent lanes, reads
// outside the mask) stops the launch with a BackendError naming the kernel, block and thread.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "data/host/host_test_support.hpp"
#include "host/host_backend.hpp"
#include "metrale/error.hpp"
#include "metrale/gpu/kernel_launch.hpp"

// The prelude, then the kernels it makes compilable: the order matters.
// clang-format off
#include "metrale/host/cuda_host_prelude.hpp"
#include "data/host/misuse.cuh"
// clang-format on

using Catch::Matchers::Contains;
using metrale::BackendError;
using metrale::DevicePtr;
using metrale::HostBackend;
using metrale::HostBackendOptions;
using metrale::KernelLaunch;
using metrale::make_host_kernel;
using namespace metrale_test;

namespace {

// Launches `Kernel` (one int* argument) on `blocks` x `threads` and returns the error text.
template <auto Kernel>
std::string launch_error(const char* name, unsigned blocks, unsigned threads, unsigned workers = 2) {
  HostBackendOptions options;
  options.worker_threads = workers;
  HostBackend gpu(options);
  gpu.add_kernel(make_host_kernel<Kernel>(name, {}));
  const auto kernel = load_kernel(gpu, name);
  const DevicePtr out = upload(gpu, std::vector<int>(blocks * threads, -1));
  try {
    KernelLaunch(gpu, kernel).grid({blocks, 1, 1}).block({threads, 1, 1}).arg_ptr(out).launch();
  } catch (const BackendError& error) {
    return error.what();
  }
  FAIL("the launch of " << name << " did not fail");
  return {};
}

}  // namespace

TEST_CASE("host backend: threads exiting before a barrier others wait at are reported", "[host][concurrency]") {
  const std::string error = launch_error<&exits_before_barrier>("exits_before_barrier", 4, 64);
  INFO(error);
  CHECK_THAT(error, Contains("exits_before_barrier"));
  CHECK_THAT(error, Contains("block (2,0,0)"));
  CHECK_THAT(error, Contains("thread (0,0,0) waits at __syncthreads() at misuse.cuh:"));
  CHECK_THAT(error, Contains("thread (5,0,0) exited"));
}

TEST_CASE("host backend: threads at two different barriers are reported", "[host]") {
  const std::string error = launch_error<&split_barriers>("split_barriers", 1, 32, 1);
  INFO(error);
  CHECK_THAT(error, Contains("split_barriers"));
  CHECK_THAT(error, Contains("block (0,0,0)"));
  CHECK_THAT(error, Contains("thread (0,0,0) waits at __syncthreads()"));
  CHECK_THAT(error, Contains("thread (1,0,0) waits at a different __syncthreads()"));
}

TEST_CASE("host backend: a shuffle whose mask names an exited lane is reported", "[host]") {
  const std::string error = launch_error<&shuffle_names_exited_lane>("shuffle_names_exited_lane", 3, 64);
  INFO(error);
  CHECK_THAT(error, Contains("shuffle_names_exited_lane"));
  CHECK_THAT(error, Contains("block ("));
  CHECK_THAT(error, Contains("thread (0,0,0) (lane 0) waits at __shfl_xor_sync at misuse.cuh:"));
  CHECK_THAT(error, Contains("mask 0xffffffff"));
  CHECK_THAT(error, Contains("lane 3 (thread (3,0,0)) exited"));
}

TEST_CASE("host backend: a shuffle reading a lane outside its mask is reported", "[host]") {
  const std::string error = launch_error<&shuffle_reads_outside_mask>("shuffle_reads_outside_mask", 1, 32);
  INFO(error);
  CHECK_THAT(error, Contains("shuffle_reads_outside_mask"));
  CHECK_THAT(error, Contains("thread (0,0,0) (lane 0)"));
  CHECK_THAT(error, Contains("reads lane 20, which the mask 0x0000ffff does not name"));
}

TEST_CASE("host backend: a shuffle one lane skips for a barrier is reported", "[host]") {
  const std::string error = launch_error<&shuffle_against_barrier>("shuffle_against_barrier", 1, 32);
  INFO(error);
  CHECK_THAT(error, Contains("thread (1,0,0) (lane 1) waits at __shfl_down_sync"));
  CHECK_THAT(error, Contains("lane 0 (thread (0,0,0)) waits at __syncthreads()"));
}

TEST_CASE("host backend: a shuffle width that is not a power of two is reported", "[host]") {
  const std::string error = launch_error<&shuffle_bad_width>("shuffle_bad_width", 1, 32);
  INFO(error);
  CHECK_THAT(error, Contains("thread (0,0,0): __shfl_xor_sync at misuse.cuh:"));
  CHECK_THAT(error, Contains("width 12"));
}

TEST_CASE("host backend: a mask naming lanes past the end of the block is reported", "[host]") {
  // 40 threads: the second warp has 8 lanes, but the kernel's full mask names 32.
  const std::string error = launch_error<&full_mask_shuffle>("full_mask_shuffle", 1, 40);
  INFO(error);
  CHECK_THAT(error, Contains("thread (32,0,0) (lane 0) waits at __shfl_xor_sync"));
  CHECK_THAT(error, Contains("lane 8 does not exist (the block has 40 threads)"));
}

TEST_CASE("host backend: the backend still runs kernels after a failed launch", "[host]") {
  HostBackendOptions options;
  options.worker_threads = 1;
  HostBackend gpu(options);
  gpu.add_kernel(make_host_kernel<&exits_before_barrier>("exits_before_barrier", {}));
  const auto kernel = load_kernel(gpu, "exits_before_barrier");
  const DevicePtr out = upload(gpu, std::vector<int>(4 * 64, -1));
  CHECK_THROWS_AS(KernelLaunch(gpu, kernel).grid({4, 1, 1}).block({64, 1, 1}).arg_ptr(out).launch(), BackendError);
  // Two blocks never reach block 2's misuse: every thread writes its 1.
  gpu.copy_to_device(out, std::vector<int>(2 * 64, -1).data(), 2 * 64 * sizeof(int));
  KernelLaunch(gpu, kernel).grid({2, 1, 1}).block({64, 1, 1}).arg_ptr(out).launch();
  const auto written = download<int>(gpu, out, 2 * 64);
  CHECK(std::count(written.begin(), written.end(), 1) == 2 * 64);
}
