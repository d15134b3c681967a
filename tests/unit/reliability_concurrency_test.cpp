// reliability_concurrency_test.cpp: an engine calls the ops from several threads at once. One
// host runtime (registry, backend, log-once slots shared) serves both ops from three threads,
// each with its own buffers and shapes on both sides of the twins' floors; every result must
// equal the reference's bytes, and the once-per-process slots must be claimed exactly once
// however the threads race. Kept small: the [concurrency] tag also runs it under TSan.
#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <thread>
#include <vector>

#include "metrale/ops/fp8_act_quant.hpp"
#include "metrale/ops/ssm_ba_gates.hpp"
#include "metrale/runtime.hpp"
#include "ops/fp8_act_quant/fp8_act_quant.hpp"
#include "ops/log_once.hpp"
#include "ops/ssm_ba_gates/ssm_ba_gates.hpp"
#include "ref/bf16.hpp"
#include "support/isolated_runtime.hpp"
#include "support/reliability_host_ops.hpp"

using namespace metrale;
using metrale::reliability_test::download;
using metrale::reliability_test::upload;

namespace {

std::unique_ptr<Runtime> small_host_runtime() {
  // sm_count 1: twins at M >= 2 (BA) and 2 CTAs (FP8), so both picks are reached.
  RuntimeOptions options = metrale::test::isolated_runtime_options(BackendChoice::kHost, 1);
  options.host_worker_threads = 2;
  return Runtime::open(std::move(options));
}

// One BA call at M tokens; true when gate_out equals the reference's bytes.
bool ba_matches(Runtime& runtime, std::uint32_t m, std::uint64_t seed) {
  GpuBackend& gpu = *runtime.backend();
  const std::uint32_t n = 96, k = 256, nv = 48, vpg = 3;
  const auto x = ref::random_bf16(std::size_t{m} * k, seed);
  const auto w = ref::random_bf16(std::size_t{n} * k, seed + 1, 0.05f);
  const auto a_log = ref::random_floats(nv, seed + 2, -1.0f, 1.0f);
  const auto dt_bias = ref::random_floats(nv, seed + 3, -1.0f, 1.0f);
  const std::size_t out_count = std::size_t{m} * 2 * nv;
  const ops::BaGatesArgs args{upload(gpu, x),
                              upload(gpu, w),
                              upload(gpu, a_log),
                              upload(gpu, dt_bias),
                              upload(gpu, std::vector<float>(out_count, -12345.0f)),
                              m,
                              n,
                              k,
                              k,
                              2 * nv,
                              nv,
                              vpg};
  ops::ssm_ba_gates(runtime, args);
  std::vector<float> expected(out_count, 0.0f);
  ref::ssm_ba_gates_reference({x, w, a_log, dt_bias}, {m, n, k, k, 2 * nv, nv, vpg}, expected);
  const auto out = download<float>(gpu, args.gate_out, out_count);
  for (const DevicePtr ptr : {args.x, args.weight, args.a_log, args.dt_bias, args.gate_out}) {
    gpu.free(ptr);
  }
  return std::memcmp(out.data(), expected.data(), out_count * sizeof(float)) == 0;
}

// One FP8 call at M tokens; true when q and the scales equal the reference's.
bool fp8_matches(Runtime& runtime, std::uint32_t m, std::uint64_t seed) {
  GpuBackend& gpu = *runtime.backend();
  const std::uint32_t k = 512;
  const auto x = ref::random_bf16(std::size_t{m} * k, seed, 6.0f);
  ops::Fp8QuantArgs args;
  args.x = upload(gpu, x);
  args.q = upload(gpu, std::vector<std::uint8_t>(std::size_t{m} * k, 0xAB));
  args.scales = upload(gpu, std::vector<float>(std::size_t{m} * (k / 128), -1.0f));
  args.m = m;
  args.k = k;
  args.x_row_stride = k;
  ops::fp8_act_quant(runtime, args);
  const auto expected = ref::fp8_act_quant_reference(x, {m, k, k, false});
  const bool same = download<std::uint8_t>(gpu, args.q, std::size_t{m} * k) == expected.q &&
                    download<float>(gpu, args.scales, std::size_t{m} * (k / 128)) == expected.scales;
  for (const DevicePtr ptr : {args.x, args.q, args.scales}) {
    gpu.free(ptr);
  }
  return same;
}

}  // namespace

TEST_CASE("reliability: three threads running both ops on one host runtime get the reference's bytes",
          "[reliability][concurrency]") {
  auto runtime = small_host_runtime();
  REQUIRE(runtime->has_device());
  std::atomic<int> wrong{0};
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (std::uint32_t t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      try {
        for (std::uint32_t i = 0; i < 2; ++i) {
          const std::uint32_t m = 1 + (t + i) % 3;  // M = 1 takes the parents, M >= 2 the twins
          wrong += ba_matches(*runtime, m, 100 * t + i) ? 0 : 1;
          wrong += fp8_matches(*runtime, m, 200 * t + i) ? 0 : 1;
        }
      } catch (const std::exception& failure) {
        UNSCOPED_INFO(failure.what());
        ++errors;
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  CHECK(errors == 0);
  CHECK(wrong == 0);
}

TEST_CASE("reliability: a once-per-process log slot is claimed once across racing threads",
          "[reliability][concurrency]") {
  ops::OnceSlots slots(4);
  std::atomic<int> claimed[5] = {};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (std::size_t round = 0; round < 200; ++round) {
        const std::size_t index = round % 5;  // index 4 is past the end: never claimed
        if (slots.claim(index)) {
          ++claimed[index];
        }
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  for (std::size_t index = 0; index < 4; ++index) {
    CHECK(claimed[index] == 1);
  }
  CHECK(claimed[4] == 0);
}
