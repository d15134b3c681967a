// tools/bench/host_bench.cpp: metrale-host-bench, the host backend's timings (a tool, not a
// test): the cost of one sync per thread (two fiber switches plus the scheduler's resolution), the
// wall time of a BA-gates-sized load, and the BA-gates parent and twin from src/ops/ssm_ba_gates/ at the real
// prefill shape (M = 264, K = 5120, N = 96). Exits 1 when the twin's bytes differ from the parent's.
// `--corpus [--workers N] [--repeats N] [--scale F] [--case NAME]`: the corpus of ordinary CUDA
// kernels instead (host_bench_corpus.cpp), elements per second per kernel.
#include <cuda_bf16.h>  // __float2bfloat16 for the inputs, before the templates

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

#include "data/host/host_test_support.hpp"
#include "host/host_backend.hpp"
#include "metrale/gpu/kernel_launch.hpp"

// clang-format off
#include "metrale/host/cuda_host_prelude.hpp"
#include "data/host/bench.cuh"
#include "ssm_ba_gates.cuh"
// clang-format on

using metrale::DevicePtr;
using metrale::HostBackend;
using metrale::HostBackendOptions;
using metrale::KernelLaunch;
using metrale::KernelParams;
using metrale::make_host_kernel;
using namespace metrale_test;

namespace {

template <typename Launch>
double seconds(Launch&& launch) {
  const auto start = std::chrono::steady_clock::now();
  launch();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::vector<__nv_bfloat16> random_bf16(std::size_t count, std::uint32_t seed) {
  const std::vector<float> values = random_floats(count, seed);
  std::vector<__nv_bfloat16> out(count);
  for (std::size_t i = 0; i < count; ++i) {
    out[i] = __float2bfloat16(values[i]);
  }
  return out;
}

void sync_and_gemv_timings() {
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
  }
}

int ba_gates_twin_and_parent() {
  const unsigned m = 264;
  const unsigned k = 5120;
  const unsigned n = 96;
  const unsigned nv = 48;
  const unsigned vheads_per_group = 3;
  HostBackend gpu;
  gpu.add_kernel(make_host_kernel<&metrale::kernels::dense_gemm_ba_gates_prefill<256, 64>>("bench_ba_parent",
                                                                                           KernelParams{256, 64, 0}));
  gpu.add_kernel(make_host_kernel<&metrale::kernels::dense_gemm_ba_gates_prefill_hopper<256, 64, 8>>(
      "bench_ba_twin", KernelParams{256, 64, 8}));
  const DevicePtr x = upload(gpu, random_bf16(static_cast<std::size_t>(m) * k, 1));
  const DevicePtr w = upload(gpu, random_bf16(static_cast<std::size_t>(n) * k, 2));
  const DevicePtr a_log = upload(gpu, random_floats(nv, 3));
  const DevicePtr dt_bias = upload(gpu, random_floats(nv, 4));
  const std::vector<float> poison(static_cast<std::size_t>(m) * 2 * nv, std::numeric_limits<float>::quiet_NaN());
  std::vector<float> outputs[2];
  const char* names[2] = {"bench_ba_parent", "bench_ba_twin"};
  const metrale::Dim3 grids[2] = {{m, (n + 3) / 4, 1}, {m, 1, 1}};
  for (int which = 0; which < 2; ++which) {
    const DevicePtr out = upload(gpu, poison);
    const auto kernel =
        load_kernel(gpu, names[which], which == 0 ? KernelParams{256, 64, 0} : KernelParams{256, 64, 8});
    const auto start = std::chrono::steady_clock::now();
    KernelLaunch(gpu, kernel)
        .grid(grids[which])
        .block({256, 1, 1})
        .arg_ptr(x)
        .arg_ptr(w)
        .arg_ptr(a_log)
        .arg_ptr(dt_bias)
        .arg_ptr(out)
        .arg_u32(m)
        .arg_u32(n)
        .arg_u32(k)
        .arg_u32(k)
        .arg_u32(2 * nv)
        .arg_u32(nv)
        .arg_u32(vheads_per_group)
        .launch();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%s: %s, M=%u K=%u N=%u: %.3f s\n", gpu.describe().c_str(), names[which], m, k, n, seconds);
    outputs[which] = download<float>(gpu, out, poison.size());
  }
  for (float value : outputs[1]) {
    if (std::isnan(value)) {
      std::fprintf(stderr, "host bench: the twin left an output unwritten\n");
      return 1;
    }
  }
  if (std::memcmp(outputs[0].data(), outputs[1].data(), poison.size() * sizeof(float)) != 0) {
    std::fprintf(stderr, "host bench: twin bytes differ from the parent's\n");
    return 1;
  }
  return 0;
}

}  // namespace

// tools/bench/host_bench_corpus.cpp
int corpus_bench(int argc, char** argv);

int main(int argc, char** argv) {
  try {
    if (argc > 1 && std::strcmp(argv[1], "--corpus") == 0) {
      return corpus_bench(argc - 1, argv + 1);
    }
    sync_and_gemv_timings();
    return ba_gates_twin_and_parent();
  } catch (const std::exception& error) {
    std::fprintf(stderr, "host bench: %s\n", error.what());
    return 1;
  }
}
