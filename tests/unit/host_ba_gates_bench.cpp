// The BA-gates parent and twin from templates/, run on the host backend at the real prefill shape
// (M = 264, K = 5120, N = 96): wall time of each, and twin bytes == parent bytes. Hidden from the
// normal run: `metrale_unit_tests "[.host_bench]"`.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

#include "data/host/host_test_support.hpp"
#include "host/host_backend.hpp"
#include "metrale/gpu/kernel_launch.hpp"

// clang-format off
#include "metrale/host/cuda_host_prelude.hpp"
#include "ssm_ba_gates.cuh"
// clang-format on

using metrale::DevicePtr;
using metrale::HostBackend;
using metrale::KernelLaunch;
using metrale::KernelParams;
using metrale::make_host_kernel;
using namespace metrale_test;

namespace {

std::vector<__nv_bfloat16> random_bf16(std::size_t count, std::uint32_t seed) {
  const std::vector<float> values = random_floats(count, seed);
  std::vector<__nv_bfloat16> out(count);
  for (std::size_t i = 0; i < count; ++i) {
    out[i] = __float2bfloat16(values[i]);
  }
  return out;
}

}  // namespace

TEST_CASE("host backend: BA gates twin and parent at M=264, K=5120, N=96", "[.host_bench]") {
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
    REQUIRE_FALSE(std::isnan(value));
  }
  CHECK(std::memcmp(outputs[0].data(), outputs[1].data(), poison.size() * sizeof(float)) == 0);
}
