// host_tile_mma_test.cpp: the host backend's wmma emulation against the PTX ISA's definitions,
// written here independently of it: wmma.load.a .row reads A[r][c] at p[r * ldm + c],
// wmma.load.b .col reads B[k][n] at p[n * ldm + k], wmma.store.d .row writes D[r][c] at
// p[r * ldm + c], and D = A B + C. A run through the collectives must match a float64 product
// of the same bf16 values; misuses a GPU would reject (lane-divergent tile, misaligned tile,
// bad ldm, part of a warp) stop the launch with a message naming the rule.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "data/host/host_test_support.hpp"
#include "host/host_backend.hpp"
#include "metrale/error.hpp"
#include "metrale/gpu/kernel_launch.hpp"
#include "ref/bf16.hpp"

// clang-format off
#include "metrale/host/cuda_host_prelude.hpp"
#include "data/host/tile_mma.cuh"
// clang-format on

using Catch::Matchers::Contains;
using namespace metrale;
using namespace metrale_test;

namespace {

struct ProbeRun {
  std::vector<std::uint16_t> a, b;  // [16][40] each
  std::vector<float> d;             // [16][20]
  std::string error;
};

template <auto Kernel>
ProbeRun run_probe(const char* name, unsigned threads = 32) {
  HostBackendOptions options;
  options.worker_threads = 1;
  HostBackend gpu(options);
  gpu.add_kernel(make_host_kernel<Kernel>(name, {}));
  const KernelHandle kernel = load_kernel(gpu, name);
  ProbeRun run;
  run.a = ref::random_bf16(16 * kProbeLd, 91, 2.0f);
  run.b = ref::random_bf16(16 * kProbeLd, 92, 2.0f);
  const DevicePtr a = upload(gpu, run.a);
  const DevicePtr b = upload(gpu, run.b);
  const DevicePtr d = upload(gpu, std::vector<float>(16 * kProbeOutLd, -7.0f));
  try {
    KernelLaunch(gpu, kernel).grid({1, 1, 1}).block({threads, 1, 1}).arg_ptr(a).arg_ptr(b).arg_ptr(d).launch();
    run.d = download<float>(gpu, d, 16 * kProbeOutLd);
  } catch (const BackendError& e) {
    run.error = e.what();
  }
  return run;
}

}  // namespace

TEST_CASE("host wmma: load.a row, load.b col, mma, store.d row follow the PTX definitions", "[host][tile_mma]") {
  const ProbeRun run = run_probe<&tile_mma_probe>("tile_mma_probe");
  REQUIRE(run.error.empty());
  double worst = 0.0;
  for (std::uint32_t r = 0; r < 16; ++r) {
    for (std::uint32_t n = 0; n < 16; ++n) {
      double want = 0.0;
      for (std::uint32_t k = 0; k < 32; ++k) {
        want +=
            double{ref::bf16_to_float(run.a[r * kProbeLd + k])} * double{ref::bf16_to_float(run.b[n * kProbeLd + k])};
      }
      const double got = run.d[r * kProbeOutLd + n];
      worst = std::max(worst, std::fabs(got - want) / std::max(1.0, std::fabs(want)));
    }
    // The 4 padding columns of each D row are never written.
    for (std::uint32_t n = 16; n < kProbeOutLd; ++n) {
      CHECK(run.d[r * kProbeOutLd + n] == -7.0f);
    }
  }
  INFO("worst error " << worst);
  CHECK(worst < 1e-5);
}

TEST_CASE("host wmma: one MMA counted per 16x16x16 tile", "[host][tile_mma]") {
  const std::uint64_t before = host::tile_mma_count();
  REQUIRE(run_probe<&tile_mma_probe>("tile_mma_probe").error.empty());
  CHECK(host::tile_mma_count() - before == 2);
}

TEST_CASE("host wmma: misuses a GPU would not accept stop the launch", "[host][tile_mma]") {
  const std::string divergent = run_probe<&tile_mma_divergent_tile>("tile_mma_divergent_tile").error;
  CHECK_THAT(divergent, Contains("warp-uniform"));
  CHECK_THAT(run_probe<&tile_mma_misaligned>("tile_mma_misaligned").error, Contains("32-byte aligned"));
  CHECK_THAT(run_probe<&tile_mma_bad_ldm>("tile_mma_bad_ldm").error, Contains("ldm 18"));
  // Half a warp: the other lanes never arrive.
  CHECK_THAT(run_probe<&tile_mma_probe>("tile_mma_probe", 16).error, Contains("wmma tile operation"));
}
