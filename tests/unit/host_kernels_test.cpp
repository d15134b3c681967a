// Host backend: kernels of our own (block reductions, warp scans, 16-lane shuffles) run as fibers
// and match references computed independently on the CPU.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "data/host/host_test_support.hpp"
#include "host/host_backend.hpp"
#include "metrale/gpu/kernel_launch.hpp"
#include "metrale/runtime.hpp"
#include "support/isolated_runtime.hpp"

// The prelude, then the kernels it makes compilable: the order matters.
// clang-format off
#include "metrale/host/cuda_host_prelude.hpp"
#include "data/host/reductions.cuh"
#include "data/host/warp_collectives.cuh"
// clang-format on

using metrale::DevicePtr;
using metrale::HostBackend;
using metrale::HostBackendOptions;
using metrale::KernelLaunch;
using metrale::KernelParams;
using metrale::make_host_kernel;
using namespace metrale_test;

namespace {

HostBackendOptions with_workers(unsigned workers) {
  HostBackendOptions options;
  options.worker_threads = workers;
  return options;
}

template <unsigned BLOCK>
std::vector<float> run_block_sum(HostBackend& gpu, const std::vector<float>& input, unsigned blocks) {
  gpu.add_kernel(make_host_kernel<&block_sum<BLOCK>>("test_block_sum", KernelParams{BLOCK, 0, 0}));
  const auto kernel = load_kernel(gpu, "test_block_sum", KernelParams{BLOCK, 0, 0});
  const DevicePtr in = upload(gpu, input);
  const DevicePtr out = upload(gpu, std::vector<float>(blocks, std::numeric_limits<float>::quiet_NaN()));
  KernelLaunch(gpu, kernel)
      .grid({blocks, 1, 1})
      .block({BLOCK, 1, 1})
      .arg_ptr(in)
      .arg_ptr(out)
      .arg_u32(static_cast<std::uint32_t>(input.size()))
      .launch();
  auto result = download<float>(gpu, out, blocks);
  gpu.free(in);
  gpu.free(out);
  return result;
}

template <unsigned BLOCK>
void check_block_sum(unsigned workers) {
  HostBackend gpu(with_workers(workers));
  const unsigned blocks = 5;
  const auto n = static_cast<unsigned>(blocks * BLOCK * 4 - BLOCK / 2);  // the last block is partial
  const std::vector<float> input = random_floats(n, BLOCK);
  const std::vector<float> sums = run_block_sum<BLOCK>(gpu, input, blocks);
  for (unsigned b = 0; b < blocks; ++b) {
    double expected = 0.0;
    for (unsigned i = b * BLOCK * 4; i < std::min(n, (b + 1) * BLOCK * 4); ++i) {
      expected += input[i];
    }
    INFO("block size " << BLOCK << ", block " << b);
    CHECK(sums[b] == Approx(expected).margin(1e-4));
  }
  CHECK(gpu.live_allocations() == 0);
}

}  // namespace

TEST_CASE("host backend: a shared-memory block reduction matches a CPU sum", "[host]") {
  check_block_sum<32>(2);
  check_block_sum<64>(1);
  check_block_sum<256>(2);
  check_block_sum<1024>(2);
}

TEST_CASE("host backend: several worker threads give the bytes one gives", "[host][concurrency]") {
  const std::vector<float> input = random_floats(48 * 128 * 4, 7);
  HostBackend one(with_workers(1));
  HostBackend four(with_workers(4));
  const auto a = run_block_sum<128>(one, input, 48);
  const auto b = run_block_sum<128>(four, input, 48);
  REQUIRE(a.size() == b.size());
  CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

TEST_CASE("host backend: xor-shuffle warp sums and shared partials give a row dot product", "[host]") {
  HostBackend gpu(with_workers(2));
  gpu.add_kernel(make_host_kernel<&row_dot>("test_row_dot", KernelParams{}));
  const auto kernel = load_kernel(gpu, "test_row_dot", KernelParams{});
  const unsigned rows = 6;
  const unsigned len = 1000;
  const auto x = random_floats(rows * len, 11);
  const auto w = random_floats(len, 12);
  const DevicePtr dx = upload(gpu, x);
  const DevicePtr dw = upload(gpu, w);
  const DevicePtr dout = upload(gpu, std::vector<float>(rows, std::numeric_limits<float>::quiet_NaN()));
  for (unsigned threads : {32U, 96U, 256U}) {
    KernelLaunch(gpu, kernel)
        .grid({rows, 1, 1})
        .block({threads, 1, 1})
        .arg_ptr(dx)
        .arg_ptr(dw)
        .arg_ptr(dout)
        .arg_u32(len)
        .launch();
    const auto out = download<float>(gpu, dout, rows);
    for (unsigned r = 0; r < rows; ++r) {
      double expected = 0.0;
      for (unsigned k = 0; k < len; ++k) {
        expected += static_cast<double>(x[r * len + k]) * w[k];
      }
      INFO("threads " << threads << ", row " << r);
      CHECK(out[r] == Approx(expected).margin(1e-3));
    }
  }
}

TEST_CASE("host backend: a warp inclusive scan with __shfl_up_sync matches a sequential scan", "[host]") {
  HostBackend gpu(with_workers(2));
  gpu.add_kernel(make_host_kernel<&warp_inclusive_scan>("test_warp_scan", KernelParams{}));
  const auto kernel = load_kernel(gpu, "test_warp_scan", KernelParams{});
  const unsigned blocks = 3;
  const unsigned threads = 128;
  const auto input = random_ints<int>(blocks * threads, 3, -1000, 1000);
  const DevicePtr in = upload(gpu, input);
  const DevicePtr out = upload(gpu, std::vector<int>(input.size(), std::numeric_limits<int>::min()));
  KernelLaunch(gpu, kernel).grid({blocks, 1, 1}).block({threads, 1, 1}).arg_ptr(in).arg_ptr(out).launch();
  const auto scanned = download<int>(gpu, out, input.size());
  for (std::size_t warp = 0; warp < input.size() / 32; ++warp) {
    int running = 0;
    for (std::size_t lane = 0; lane < 32; ++lane) {
      running += input[warp * 32 + lane];
      INFO("warp " << warp << " lane " << lane);
      REQUIRE(scanned[warp * 32 + lane] == running);
    }
  }
}

TEST_CASE("host backend: 16-lane shuffles stay inside their segment", "[host]") {
  HostBackend gpu(with_workers(2));
  gpu.add_kernel(make_host_kernel<&half_warp_ops>("test_half_warp", KernelParams{}));
  const auto kernel = load_kernel(gpu, "test_half_warp", KernelParams{});
  const unsigned threads = 64;
  const auto input = random_ints<unsigned>(threads * 2, 5, 1, 1000000);
  const std::vector<unsigned> poison(input.size(), 0xdeadbeefU);
  const DevicePtr in = upload(gpu, input);
  DevicePtr outs[4];
  for (DevicePtr& out : outs) {
    out = upload(gpu, poison);
  }
  KernelLaunch(gpu, kernel)
      .grid({2, 1, 1})
      .block({threads, 1, 1})
      .arg_ptr(in)
      .arg_ptr(outs[0])
      .arg_ptr(outs[1])
      .arg_ptr(outs[2])
      .arg_ptr(outs[3])
      .launch();
  const auto sums = download<unsigned>(gpu, outs[0], input.size());
  const auto firsts = download<unsigned>(gpu, outs[1], input.size());
  const auto downs = download<unsigned>(gpu, outs[2], input.size());
  const auto votes = download<unsigned>(gpu, outs[3], input.size());
  for (std::size_t i = 0; i < input.size(); ++i) {
    const std::size_t segment = i / 16 * 16;
    unsigned total = 0;
    for (std::size_t j = segment; j < segment + 16; ++j) {
      total += input[j];
    }
    const std::size_t warp = i / 32 * 32;
    unsigned ballot = 0;
    for (unsigned lane = 0; lane < 32; ++lane) {
      ballot |= (input[warp + lane] & 1U) << lane;
    }
    INFO("thread " << i);
    CHECK(sums[i] == total);
    CHECK(firsts[i] == input[segment]);
    CHECK(downs[i] == (i % 16 + 3 < 16 ? input[i + 3] : input[i]));
    CHECK(votes[i] == ballot);
  }
}

TEST_CASE("host backend: half-warps shuffling under their own masks at different sites", "[host]") {
  HostBackend gpu(with_workers(1));
  gpu.add_kernel(make_host_kernel<&split_half_warps>("test_split_half_warps", KernelParams{}));
  const auto kernel = load_kernel(gpu, "test_split_half_warps", KernelParams{});
  const auto input = random_ints<int>(64, 9, -50, 50);
  const DevicePtr in = upload(gpu, input);
  const DevicePtr out = upload(gpu, std::vector<int>(64, 12345));
  KernelLaunch(gpu, kernel).grid({1, 1, 1}).block({64, 1, 1}).arg_ptr(in).arg_ptr(out).launch();
  const auto result = download<int>(gpu, out, 64);
  for (std::size_t i = 0; i < 64; ++i) {
    const std::size_t lane = i % 32;
    const std::size_t source = lane < 16 ? i - lane + (15 - lane) : i ^ 1U;
    INFO("thread " << i);
    CHECK(result[i] == input[source]);
  }
}

TEST_CASE("an engine's own host kernel runs through a runtime opened on the host backend", "[host][runtime]") {
  // Only the public API: RuntimeOptions::host_kernels, the runtime's backend and the launch builder.
  metrale::RuntimeOptions options = metrale::test::isolated_runtime_options(metrale::BackendChoice::kHost);
  options.host_worker_threads = 2;
  options.host_kernels.push_back(make_host_kernel<&warp_inclusive_scan>("engine_warp_scan", KernelParams{}));
  auto runtime = metrale::Runtime::open(std::move(options));
  metrale::GpuBackend& gpu = *runtime->backend();
  const metrale::KernelHandle kernel = gpu.load(metrale::LoadRequest{"engine_warp_scan", KernelParams{}, "", {}, {}});
  REQUIRE(kernel.present());
  const auto input = random_ints<int>(64, 11, -1000, 1000);
  const DevicePtr in = upload(gpu, input);
  const DevicePtr out = upload(gpu, std::vector<int>(input.size(), std::numeric_limits<int>::min()));
  KernelLaunch(gpu, kernel).grid({2, 1, 1}).block({32, 1, 1}).arg_ptr(in).arg_ptr(out).launch();
  const auto scanned = download<int>(gpu, out, input.size());
  for (std::size_t warp = 0; warp < 2; ++warp) {
    int running = 0;
    for (std::size_t lane = 0; lane < 32; ++lane) {
      running += input[warp * 32 + lane];
      INFO("warp " << warp << " lane " << lane);
      REQUIRE(scanned[warp * 32 + lane] == running);
    }
  }
}
