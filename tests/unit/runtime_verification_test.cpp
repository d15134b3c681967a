// runtime_verification_test.cpp: verification before a handle is published, on the host backend.
// A template folder with a planted mistake in the FP8 twin (support/edited_templates.hpp): the
// twin is refused with a reason naming the device and the worst element, and the op returns the
// parent's bytes, equal to the CPU reference; the verdicts are cached beside the disk cache and
// the next open runs no check; a corrupt verdict file is ignored and the kernel checked again;
// METRALE_VERIFY=off skips the checks (the planted twin then runs); a check that hangs is cut off
// by the time limit, its kernel refused and the runtime stays usable (the FP8 op runs its parent).
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "metrale/error.hpp"
#include "metrale/runtime.hpp"
#include "ops/fp8_act_quant/fp8_act_quant.hpp"
#include "ops/op_kernels.hpp"
#include "ref/bf16.hpp"
#include "runtime/kernel_verification.hpp"
#include "runtime/verdict_cache.hpp"
#include "runtime/verification_gate.hpp"
#include "support/edited_templates.hpp"
#include "support/isolated_runtime.hpp"

using namespace metrale;

namespace {

constexpr std::uint32_t kHostSms = 2;  // the twins' floors are a few tokens: small shapes reach them

// Where these tests keep the host JIT's objects (a rerun loads the planted twin, not compiles it)
// and their verdicts (removed first: each run starts cold).
std::filesystem::path work_dir() { return std::filesystem::path(METRALE_BINARY_DIR) / "test-cache" / "verification"; }

RuntimeOptions planted_options(const std::filesystem::path& templates, std::string extra = {}, std::string value = {}) {
  RuntimeOptions options;
  options.backend = BackendChoice::kHost;
  options.target = "hopper";
  options.host_sm_count = kHostSms;
  options.host_worker_threads = 2;
  options.env = test::template_dir_env(templates, std::move(extra), std::move(value));
  options.cache_dir = (work_dir() / "cache").string();
  return options;
}

struct Fp8Run {
  ops::Pick pick;
  std::vector<std::uint8_t> q;
  std::vector<float> scales;
};

// One fp8_act_quant call at M 64, K 1024 (fp32 scales, row-major) into poisoned outputs.
Fp8Run run_fp8(Runtime& runtime, const std::vector<std::uint16_t>& x) {
  constexpr std::uint32_t kM = 64;
  constexpr std::uint32_t kK = 1024;
  GpuBackend& gpu = *runtime.backend();
  const DevicePtr in = test::upload(gpu, x);
  const DevicePtr q = test::upload(gpu, std::vector<std::uint8_t>(std::size_t{kM} * kK, 0xAB));
  const DevicePtr scales = test::upload(gpu, std::vector<float>(std::size_t{kM} * kK / 128, -7.0F));
  const std::vector<ops::NamedArg> args{{"x", in.address}, {"q", q.address}, {"scales", scales.address},
                                        {"m", kM},         {"k", kK},        {"x_row_stride", kK}};
  Fp8Run run;
  run.pick = runtime.run("fp8_act_quant", args);
  gpu.synchronize(0);
  run.q.resize(std::size_t{kM} * kK);
  run.scales.resize(std::size_t{kM} * kK / 128);
  gpu.copy_to_host(run.q.data(), q, run.q.size());
  gpu.copy_to_host(run.scales.data(), scales, run.scales.size() * sizeof(float));
  for (const DevicePtr ptr : {in, q, scales}) {
    gpu.free(ptr);
  }
  return run;
}

std::string reason_of(const ops::Pick& pick, std::string_view role) {
  const ops::Verdict* verdict = pick.verdict(role);
  return verdict != nullptr && verdict->reason ? std::string(*verdict->reason) : std::string("(taken)");
}

}  // namespace

TEST_CASE("a twin with a planted mistake is refused and the op returns the parent's bytes, the verdict is cached",
          "[runtime][verify]") {
  std::filesystem::remove_all(work_dir() / "cache" / "verdicts");
  const std::filesystem::path templates = work_dir() / "templates";
  test::write_edited_templates(templates);
  const std::vector<std::uint16_t> x = ref::random_bf16(std::size_t{64} * 1024, 0x5eed25, 4.0F);
  const ref::Fp8RefResult expected = ref::fp8_act_quant_reference(x, {64, 1024, 1024, false});

  auto runtime = Runtime::open(planted_options(templates));
  REQUIRE(runtime->verification_enabled());
  const std::optional<KernelVerdict> twin = runtime->verdict(ops::kFp8QuantTwinKernel);
  REQUIRE(twin);
  CHECK(twin->verdict == ops::CheckVerdict::kFailed);
  CHECK_FALSE(twin->cached);
  INFO(twin->refusal);
  CHECK(twin->refusal.find("failed its check on host") == 0);
  // The worst element by index: the codes differ first (they are divided by the other scale).
  CHECK((twin->refusal.find(" q[") != std::string::npos || twin->refusal.find("scales[") != std::string::npos));
  const std::optional<KernelVerdict> parent = runtime->verdict(ops::kFp8QuantSharedKernel);
  REQUIRE(parent);
  CHECK(parent->verdict == ops::CheckVerdict::kPassed);
  CHECK(runtime->kernel_handle(ops::kFp8QuantTwinKernel).value == 0);  // never published
  const std::uint64_t first_checks = runtime->verification_checks_run();
  CHECK(first_checks >= 2);

  const Fp8Run run = run_fp8(*runtime, x);
  CHECK(run.pick.role == "parent");
  CHECK(reason_of(run.pick, "twin") == twin->refusal);
  CHECK(run.q == expected.q);
  CHECK(run.scales == expected.scales);

  const std::vector<ops::NamedArg> shape{{"m", 64}, {"k", 1024}, {"x_row_stride", 1024}};
  const ops::Explanation why = runtime->explain("fp8_act_quant", shape);
  bool shown = false;
  for (const ops::RoleExplanation& row : why.roles) {
    if (row.role == "twin") {
      shown = !row.runs && row.reject == twin->refusal && row.verification == "refused: " + twin->refusal;
    }
  }
  CHECK(shown);
  runtime.reset();

  SECTION("the next open reads every verdict from the cache: no check runs") {
    auto warm = Runtime::open(planted_options(templates));
    CHECK(warm->verification_checks_run() == 0);
    const std::optional<KernelVerdict> cached = warm->verdict(ops::kFp8QuantTwinKernel);
    REQUIRE(cached);
    CHECK(cached->cached);
    CHECK(cached->verdict == ops::CheckVerdict::kFailed);
    CHECK(warm->verdict(ops::kFp8QuantSharedKernel)->cached);
    const Fp8Run again = run_fp8(*warm, x);
    CHECK(again.pick.role == "parent");
    CHECK(again.scales == expected.scales);
  }
  SECTION("in background mode the twin is verified on the background thread before it is published") {
    RuntimeOptions options = planted_options(templates);
    options.load_mode = LoadMode::kBackgroundTwins;
    auto background = Runtime::open(options);
    background->registry().wait_background();
    CHECK(background->verdict(ops::kFp8QuantTwinKernel)->verdict == ops::CheckVerdict::kFailed);
    CHECK(background->kernel_handle(ops::kFp8QuantTwinKernel).value == 0);
    CHECK(run_fp8(*background, x).scales == expected.scales);
  }
  SECTION("a corrupt verdict file is ignored and its kernel checked again") {
    std::size_t corrupted = 0;
    for (const auto& entry : std::filesystem::directory_iterator(work_dir() / "cache" / "verdicts")) {
      if (entry.path().filename().string().rfind(std::string(ops::kFp8QuantTwinKernel) + ".", 0) == 0) {
        std::ofstream(entry.path(), std::ios::trunc) << "{\"format\": 1, \"verdict\": \"pass";
        ++corrupted;
      }
    }
    REQUIRE(corrupted == 1);
    auto rechecked = Runtime::open(planted_options(templates));
    CHECK(rechecked->verification_checks_run() == 1);
    CHECK(rechecked->verdict(ops::kFp8QuantTwinKernel)->verdict == ops::CheckVerdict::kFailed);
    CHECK_FALSE(rechecked->verdict(ops::kFp8QuantTwinKernel)->cached);
  }
  SECTION("METRALE_VERIFY=off skips the checks: the planted twin then runs") {
    auto unchecked = Runtime::open(planted_options(templates, "METRALE_VERIFY", "off"));
    CHECK_FALSE(unchecked->verification_enabled());
    CHECK(unchecked->verification_checks_run() == 0);
    CHECK(unchecked->verdicts().empty());
    const Fp8Run wrong = run_fp8(*unchecked, x);
    CHECK(wrong.pick.role == "twin");
    CHECK(wrong.scales != expected.scales);  // what the planted mistake computes
  }
}

TEST_CASE("a check that hangs is cut off by the time limit, the kernel is refused and the runtime stays usable",
          "[runtime][verify]") {
  // An engine op whose check of the FP8 twin never returns until released: the twin's checks (the
  // library op's and this one) are cut off at the limit and the twin refused. The limit leaves the
  // other kernels' checks room on a loaded machine or under a sanitizer (the slowest takes ~0.3 s).
  constexpr std::uint32_t kLimitMs = 5000;
  std::promise<void> release;
  const std::shared_future<void> released = release.get_future().share();
  ops::OpDeclaration hang;
  hang.name = "hangs_in_its_check";
  hang.roles = {ops::RoleDecl{"parent", std::string(ops::kFp8QuantTwinKernel), {}, "", ""}};
  hang.args = {ops::scalar_arg("n", std::nullopt, 1024, "length")};
  hang.run = [](const ops::OpContext&, const ops::OpCall&) { return ops::Pick{}; };
  hang.check = [released](const ops::OpContext&, const ops::CheckOptions&) {
    released.wait();
    return std::vector<ops::CheckResult>{};
  };
  RuntimeOptions options = test::isolated_runtime_options(BackendChoice::kHost, kHostSms, "hopper");
  options.host_worker_threads = 2;
  options.verify = true;
  options.verify_time_limit_ms = kLimitMs;
  options.ops.push_back(hang);
  const auto start = std::chrono::steady_clock::now();
  auto runtime = Runtime::open(options);
  // The check ran in a child process, killed at the limit; the release is for a backend that runs
  // checks on a thread (a GPU), whose cut-off check the runtime waits for when it closes.
  struct ReleaseOnExit {
    std::promise<void>& promise;
    ~ReleaseOnExit() { promise.set_value(); }
  } const release_on_exit{release};
  const double open_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const std::optional<KernelVerdict> twin = runtime->verdict(ops::kFp8QuantTwinKernel);
  REQUIRE(twin);
  CHECK(twin->verdict == ops::CheckVerdict::kFailed);
  INFO(twin->refusal);
  CHECK(twin->refusal.find("check exceeded 5000 ms") != std::string::npos);
  CHECK(open_ms >= kLimitMs);
  CHECK(runtime->kernel_handle(ops::kFp8QuantTwinKernel).value == 0);

  // Usable: the FP8 op at M 64 (above the twin's floor) runs its parent, equal to the reference.
  const std::vector<std::uint16_t> x = ref::random_bf16(std::size_t{64} * 1024, 0x5eed252, 4.0F);
  const ref::Fp8RefResult expected = ref::fp8_act_quant_reference(x, {64, 1024, 1024, false});
  const Fp8Run run = run_fp8(*runtime, x);
  CHECK(run.pick.role == "parent");
  CHECK(reason_of(run.pick, "twin") == twin->refusal);
  CHECK(run.q == expected.q);
  CHECK(run.scales == expected.scales);
}

TEST_CASE("METRALE_VERIFY takes on or off and names a bad value", "[runtime][verify]") {
  CHECK(parse_verify_setting("on"));
  CHECK(parse_verify_setting("1"));
  CHECK_FALSE(parse_verify_setting("OFF"));
  CHECK_FALSE(parse_verify_setting("false"));
  RuntimeOptions options = test::isolated_runtime_options(BackendChoice::kHost, kHostSms, "hopper");
  options.verify.reset();  // the environment decides
  options.env = test::template_dir_env(std::nullopt, "METRALE_VERIFY", "maybe");
  CHECK_THROWS_WITH(Runtime::open(options), Catch::Contains("METRALE_VERIFY='maybe' is neither on nor off"));
}

TEST_CASE("a verdict is kept and read back only under its own key", "[runtime][verify]") {
  const VerdictKey key{"NVIDIA H200", "GPU-1", "580.159.04", "k", "b256", "0123"};
  KernelVerdict verdict;
  verdict.verdict = ops::CheckVerdict::kFailed;
  verdict.check = "bytes == parent (M=7)";
  verdict.worst = "gate_out[3][17] = 0.412, reference 0.388";
  verdict.refusal = refusal_text("NVIDIA H200, driver 580.159.04", verdict.worst);
  verdict.ms = 1.5;
  CacheSecret secret;
  secret.bytes.fill(0x5a);
  secret.bytes[3] = 0x11;
  const std::string text = verdict_to_text(key, verdict, secret);
  const std::optional<KernelVerdict> back = verdict_from_text(key, text, secret);
  REQUIRE(back);
  CHECK(back->cached);
  CHECK(back->refusal ==
        "failed its check on NVIDIA H200, driver 580.159.04: gate_out[3][17] = 0.412, reference 0.388");
  VerdictKey other_driver = key;
  other_driver.driver = "590.1";
  CHECK_FALSE(verdict_from_text(other_driver, text, secret));
  CHECK_FALSE(verdict_from_text(key, text.substr(0, text.size() / 2), secret));
  CacheSecret other_secret = secret;
  other_secret.bytes[0] ^= 1;
  std::string problem;
  CHECK_FALSE(verdict_from_text(key, text, other_secret, &problem));
  CHECK_THAT(problem, Catch::Contains("keyed checksum does not hold"));
  CHECK(key.file_name().rfind("k.b256.", 0) == 0);
}

TEST_CASE("a check's rows fold into one verdict", "[runtime][verify]") {
  ops::CheckResult pass{"twin", "k", "M=7", "bytes == parent", ops::CheckVerdict::kPassed, "all equal", 1.0};
  ops::CheckResult fail{"twin", "k", "M=37", "bytes == parent", ops::CheckVerdict::kFailed, "q[1][2] = 0x10", 2.0};
  ops::CheckResult skip{"twin", "k", "M=9", "bytes == parent", ops::CheckVerdict::kSkipped, "no device", 0.0};
  const std::vector<ops::CheckResult> passed{pass, skip, pass};
  CHECK(verdict_from_rows(passed).verdict == ops::CheckVerdict::kPassed);
  const std::vector<ops::CheckResult> failed{pass, fail, pass};
  const KernelVerdict folded = verdict_from_rows(failed);
  CHECK(folded.verdict == ops::CheckVerdict::kFailed);
  CHECK(folded.worst == "q[1][2] = 0x10");
  CHECK(folded.ms == 4.0);
  CHECK(folded.cacheable);
  const std::vector<ops::CheckResult> skipped{skip};
  CHECK(verdict_from_rows(skipped).verdict == ops::CheckVerdict::kSkipped);
  CHECK_FALSE(verdict_from_rows(skipped).cacheable);
}

TEST_CASE("an edited verdict is refused by its keyed checksum and its kernel is checked again",
          "[runtime][verify][trust]") {
  // Its own folders: ctest may run the other cases of this file at the same time.
  const std::filesystem::path cache = work_dir() / "mac-cache";
  std::filesystem::remove_all(cache);
  const std::filesystem::path templates = work_dir() / "mac-templates";
  test::write_edited_templates(templates);
  RuntimeOptions options = planted_options(templates);
  options.cache_dir = cache.string();
  const std::vector<std::uint16_t> x = ref::random_bf16(std::size_t{64} * 1024, 0x3ac5, 4.0F);
  const ref::Fp8RefResult expected = ref::fp8_act_quant_reference(x, {64, 1024, 1024, false});
  {
    auto first = Runtime::open(options);
    REQUIRE(first->verdict(ops::kFp8QuantTwinKernel)->verdict == ops::CheckVerdict::kFailed);
  }
  // Someone without the cache's key turns the planted twin's failure into a pass; the JSON stays valid.
  std::size_t edited = 0;
  for (const auto& entry : std::filesystem::directory_iterator(cache / "verdicts")) {
    if (entry.path().filename().string().rfind(std::string(ops::kFp8QuantTwinKernel) + ".", 0) != 0) {
      continue;
    }
    std::ifstream in(entry.path());
    nlohmann::json json = nlohmann::json::parse(in);
    json["verdict"] = "passed";
    json["refusal"] = "";
    std::ofstream(entry.path(), std::ios::trunc) << json.dump(2);
    ++edited;
  }
  REQUIRE(edited == 1);
  auto warm = Runtime::open(options);
  CHECK(warm->verification_checks_run() == 1);  // the twin's, checked again
  const std::optional<KernelVerdict> twin = warm->verdict(ops::kFp8QuantTwinKernel);
  REQUIRE(twin);
  CHECK(twin->verdict == ops::CheckVerdict::kFailed);
  CHECK_FALSE(twin->cached);
  CHECK(warm->verdict(ops::kFp8QuantSharedKernel)->cached);  // an untouched verdict still serves
  const Fp8Run run = run_fp8(*warm, x);
  CHECK(run.pick.role == "parent");
  CHECK(run.scales == expected.scales);
  CHECK(run.q == expected.q);
}
