// Host backend timings, hidden from the normal run: `metrale_unit_tests "[.host_bench]"`.
// Prints the cost of one sync per thread (two fiber switches plus the scheduler's resolution)
// and the wall time of a BA-gates-sized load.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <vector>

#include "data/host/host_test_support.hpp"
#include "host/host_backend.hpp"
#include "metrale/gpu/kernel_launch.hpp"

// clang-format off
#include "metrale/host/cuda_host_prelude.hpp"
#include "data/host/bench.cuh"
// clang-format on

using metrale::DevicePtr;
using metrale::HostBackend;
using metrale::HostBackendOptions;
using metrale::KernelLaunch;
using metrale::make_host_kernel;
using namespace metrale_test;

namespace {

template <typename Launch>
double seconds(Launch&& launch) {
  const auto start = std::chrono::steady_clock::now();
  launch();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

TEST_CASE("host backend timings", "[.host_bench]") {
  for (unsigned workers : {1U, 2U}) {
    HostBackendOptions options;
    options.worker_threads = workers;
    HostBackend gpu(options);
    gpu.add_kernel(make_host_kernel<&shuffle_storm>("shuffle_storm", {}));
    gpu.add_kernel(make_host_kernel<&barrier_storm>("barrier_storm", {}));
    gpu.add_kernel(make_host_kernel<&gemv_like>("gemv_like", {}));
    const unsigned blocks = 264;
    const unsigned threads = 256;
    const DevicePtr out = gpu.alloc(blocks * threads * sizeof(float));

    const unsigned rounds = 100;
    for (const char* name : {"shuffle_storm", "barrier_storm"}) {
      const auto kernel = load_kernel(gpu, name);
      const double t = seconds([&] {
        KernelLaunch(gpu, kernel).grid({blocks, 1, 1}).block({threads, 1, 1}).arg_ptr(out).arg_u32(rounds).launch();
      });
      const double syncs = static_cast<double>(blocks) * threads * rounds;
      std::printf("%u worker(s): %s %u x %u threads x %u syncs: %.3f s, %.1f ns per thread-sync\n", workers, name,
                  blocks, threads, rounds, t, t / syncs * 1e9);
    }

    const unsigned len = 5120;
    const unsigned outputs = 20;
    const DevicePtr x = upload(gpu, random_floats(static_cast<std::size_t>(blocks) * len, 1));
    const DevicePtr w = upload(gpu, random_floats(static_cast<std::size_t>(outputs) * len, 2));
    const DevicePtr y = gpu.alloc(blocks * outputs * sizeof(float));
    const auto kernel = load_kernel(gpu, "gemv_like");
    const double t = seconds([&] {
      KernelLaunch(gpu, kernel)
          .grid({blocks, 1, 1})
          .block({threads, 1, 1})
          .arg_ptr(x)
          .arg_ptr(w)
          .arg_ptr(y)
          .arg_u32(len)
          .arg_u32(outputs)
          .launch();
    });
    std::printf(
        "%u worker(s): gemv_like %u x %u threads, K=%u, %u outputs (100 shuffles + 40 barriers per "
        "thread): %.3f s\n",
        workers, blocks, threads, len, outputs, t);
    CHECK(t > 0.0);
  }
}
