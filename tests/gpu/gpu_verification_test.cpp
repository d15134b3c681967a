// gpu_verification_test.cpp: verification on a CUDA device. Every kernel the hopper target ships
// is checked before an op may use it and passes on this device (a failure names the device, the
// driver and the worst element); the device's identity is what the verdicts are keyed by (a UUID,
// the NVIDIA driver's version); the checks ran on an isolated stream, so stream 0 never saw a
// copy or a launch of theirs (nothing to observe directly here: the device check's capture test,
// issue 25 part 2, covers a capture on another thread).
#include <catch2/catch.hpp>
#include <string>

#include "support/kernels_support.hpp"
#include "support/temp_dir.hpp"

using namespace metrale;

TEST_CASE("GPU: every shipped kernel passes its verification on this device, and a warm open runs no check",
          "[gpu][verify]") {
  const test::TempDir cache("metrale-gpu-verify");
  RuntimeOptions options = kernels_test::runtime_options(BackendChoice::kCuda);
  options.verify = true;
  options.registry.reset();
  options.cache_dir = cache.path().string();
  auto runtime = Runtime::open(options);
  REQUIRE(runtime->has_device());
  const GpuBackend& gpu = *runtime->backend();
  CHECK(gpu.device_uuid().rfind("GPU-", 0) == 0);
  CHECK(gpu.driver_version() != "unknown");
  const std::vector<KernelVerdict> verdicts = runtime->verdicts();
  REQUIRE_FALSE(verdicts.empty());
  for (const KernelVerdict& verdict : verdicts) {
    INFO(verdict.kernel << " (" << verdict.params << "): " << verdict.check << ": " << verdict.worst << " "
                        << verdict.refusal);
    CHECK(verdict.verdict != ops::CheckVerdict::kFailed);
  }
  CHECK(runtime->verification_checks_run() >= 1);
  runtime.reset();
  auto warm = Runtime::open(options);
  CHECK(warm->verification_checks_run() == 0);
}
