// runtime_verification_silu_test.cpp: the verification gate and the SiLU-and-mul parent on the
// host backend, its h planted some ulps off in both of its kernels (support/edited_templates.hpp)
// as a device whose expf differs from the C library's computes it: one ulp off, the parent passes
// its check and is published (the op keeps its parent); two ulps off, it is refused with a reason
// naming h while the quant step it shares with the FP8 op passes. Each run starts with no verdicts
// (their folder removed first).
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "metrale/runtime.hpp"
#include "ops/op_kernels.hpp"
#include "ops/silu_mul_fp8_quant/silu_mul_fp8_quant.hpp"
#include "support/edited_templates.hpp"

using namespace metrale;

namespace {

// A verifying host runtime over the templates with h `ulps` off; its host JIT objects stay in the
// build tree (a rerun loads them), its verdicts do not.
std::unique_ptr<Runtime> open_planted(unsigned ulps) {
  const std::filesystem::path work =
      std::filesystem::path(METRALE_BINARY_DIR) / "test-cache" / ("verification-silu-" + std::to_string(ulps));
  std::filesystem::remove_all(work / "cache" / "verdicts");
  test::write_silu_h_off_by(work / "templates", ulps);
  RuntimeOptions options;
  options.backend = BackendChoice::kHost;
  options.target = "hopper";
  options.host_worker_threads = 2;
  options.verify = true;
  options.env = test::template_dir_env(work / "templates");
  options.cache_dir = (work / "cache").string();
  return Runtime::open(options);
}

}  // namespace

TEST_CASE("verification publishes a SiLU parent whose h is one ulp off, as a device's expf may make it",
          "[runtime][verify][silu_mul]") {
  const auto runtime = open_planted(1);
  REQUIRE(runtime->verification_enabled());
  const std::optional<KernelVerdict> parent = runtime->verdict(ops::kSiluMulParentKernel);
  REQUIRE(parent);
  INFO(parent->check << ": " << parent->worst);
  CHECK(parent->verdict == ops::CheckVerdict::kPassed);
  CHECK_THAT(parent->worst, Catch::Contains("differ from the reference, 0 by > 1 bf16 ulp"));
  CHECK(parent->refusal.empty());
  CHECK(runtime->kernel_handle(ops::kSiluMulParentKernel).value != 0);  // published
}

TEST_CASE("verification refuses a SiLU parent whose h is two ulps off, naming h", "[runtime][verify][silu_mul]") {
  const auto runtime = open_planted(2);
  const std::optional<KernelVerdict> parent = runtime->verdict(ops::kSiluMulParentKernel);
  REQUIRE(parent);
  INFO(parent->check << ": " << parent->worst);
  CHECK(parent->verdict == ops::CheckVerdict::kFailed);
  CHECK_THAT(parent->refusal,
             Catch::StartsWith("failed its check on host") && Catch::Contains("by > 1 bf16 ulp; worst h["));
  CHECK(runtime->kernel_handle(ops::kSiluMulParentKernel).value == 0);  // never published
  // The quant step it shares with the FP8 op is not blamed for h: the FP8 op keeps its parent.
  const std::optional<KernelVerdict> quant = runtime->verdict(ops::kFp8QuantSharedKernel);
  REQUIRE(quant);
  INFO(quant->check << ": " << quant->worst);
  CHECK(quant->verdict == ops::CheckVerdict::kPassed);
  CHECK(runtime->kernel_handle(ops::kFp8QuantSharedKernel).value != 0);
}
