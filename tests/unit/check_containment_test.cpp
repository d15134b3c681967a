// check_containment_test.cpp: host-backend checks run in a child process (runtime/
// check_in_child.hpp). A planted FP8 twin that never ends in its check is killed at the time limit
// ("check exceeded N ms") while the parent's check, op calls and close proceed; a planted twin
// that writes far out of bounds refuses only itself and the process survives; the child runner
// itself hands back bytes, a timeout and a signal by name.
#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "host/host_backend.hpp"
#include "metrale/runtime.hpp"
#include "ops/fp8_act_quant/fp8_act_quant.hpp"
#include "ops/op_kernels.hpp"
#include "ref/bf16.hpp"
#include "runtime/check_in_child.hpp"
#include "support/edited_templates.hpp"
#include "support/isolated_runtime.hpp"
#include "support/sanitized_build.hpp"

using namespace metrale;

namespace {

// The twin's first line, which the plants go in front of (the shared kernel has no such line).
const std::string kTwinAnchor = "  const unsigned int group = blockIdx.y * GROUPS + threadIdx.x / LANES;\n";

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// A host runtime over `templates` with verification on at `limit_ms`, host objects in its own
// folder, verdicts in memory only.
RuntimeOptions planted(const std::filesystem::path& work, std::uint32_t limit_ms) {
  RuntimeOptions options = test::isolated_runtime_options(BackendChoice::kHost, 2, "hopper");
  options.host_worker_threads = 2;
  options.verify = true;
  options.verify_time_limit_ms = limit_ms;
  options.env = test::template_dir_env(work / "templates");
  options.cache_dir = (work / "cache").string();
  return options;
}

// fp8_act_quant at M 64, K 1024 into poisoned outputs, against the CPU reference.
void check_fp8_runs_parent(Runtime& runtime) {
  constexpr std::uint32_t kM = 64;
  constexpr std::uint32_t kK = 1024;
  const std::vector<std::uint16_t> x = ref::random_bf16(std::size_t{kM} * kK, 0xc0fe, 4.0F);
  const ref::Fp8RefResult expected = ref::fp8_act_quant_reference(x, {kM, kK, kK, false});
  GpuBackend& gpu = *runtime.backend();
  const DevicePtr in = test::upload(gpu, x);
  const DevicePtr q = test::upload(gpu, std::vector<std::uint8_t>(std::size_t{kM} * kK, 0xAB));
  const DevicePtr scales = test::upload(gpu, std::vector<float>(std::size_t{kM} * kK / 128, -7.0F));
  const std::vector<ops::NamedArg> args{{"x", in.address}, {"q", q.address}, {"scales", scales.address},
                                        {"m", kM},         {"k", kK},        {"x_row_stride", kK}};
  const ops::Pick pick = runtime.run("fp8_act_quant", args);
  std::vector<std::uint8_t> got_q(std::size_t{kM} * kK);
  std::vector<float> got_scales(std::size_t{kM} * kK / 128);
  gpu.copy_to_host(got_q.data(), q, got_q.size());
  gpu.copy_to_host(got_scales.data(), scales, got_scales.size() * sizeof(float));
  for (const DevicePtr ptr : {in, q, scales}) {
    gpu.free(ptr);
  }
  CHECK(pick.role == "parent");
  CHECK(got_q == expected.q);
  CHECK(got_scales == expected.scales);
}

}  // namespace

TEST_CASE("a host kernel that never ends in its check is killed at the limit while other checks ops and close proceed",
          "[runtime][verify][contained]") {
  const std::filesystem::path work = std::filesystem::path(METRALE_BINARY_DIR) / "test-cache" / "contained-hang";
  std::filesystem::remove_all(work);
  test::write_templates_editing(work / "templates", ops::kFp8QuantTemplateFile, kTwinAnchor,
                                "  for (volatile unsigned int spin = 1u; spin != 0u;) {\n  }\n" + kTwinAnchor);
  // Room for the other checks on a loaded machine: every kernel's check runs under the same limit,
  // and under AddressSanitizer the BA split-K check alone takes more than 5 s on two cores.
  constexpr std::uint32_t kLimitMs = test::kSanitizedBuild ? 30000 : 5000;
  auto runtime = Runtime::open(planted(work, kLimitMs));
  const std::optional<KernelVerdict> twin = runtime->verdict(ops::kFp8QuantTwinKernel);
  REQUIRE(twin);
  INFO(twin->refusal);
  CHECK(twin->verdict == ops::CheckVerdict::kFailed);
  CHECK(twin->refusal.find("check exceeded " + std::to_string(kLimitMs) + " ms") != std::string::npos);
  CHECK(twin->ms >= kLimitMs);
  CHECK(runtime->kernel_handle(ops::kFp8QuantTwinKernel).value == 0);
  // Every other kernel's check ran to its end: none was cut off behind the hung one.
  for (const KernelVerdict& verdict : runtime->verdicts()) {
    if (verdict.kernel != ops::kFp8QuantTwinKernel) {
      INFO(verdict.kernel << ": " << verdict.refusal);
      CHECK(verdict.verdict != ops::CheckVerdict::kFailed);
    }
  }
  // Op calls proceed (before: the hung check held the host executor and this call waited forever).
  check_fp8_runs_parent(*runtime);
  const auto closing = std::chrono::steady_clock::now();
  runtime.reset();
  CHECK(ms_since(closing) < kLimitMs);  // nothing left running to wait for
}

TEST_CASE("a host kernel that writes out of bounds in its check is refused and the process survives",
          "[runtime][verify][contained]") {
  const std::filesystem::path work = std::filesystem::path(METRALE_BINARY_DIR) / "test-cache" / "contained-fault";
  std::filesystem::remove_all(work);
  test::write_templates_editing(work / "templates", ops::kFp8QuantTemplateFile, kTwinAnchor,
                                "  if (blockIdx.x == 0u && threadIdx.x == 0u) {\n"
                                "    reinterpret_cast<volatile unsigned char*>(q)[1ull << 44] = 1u;\n  }\n" +
                                    kTwinAnchor);
  auto runtime = Runtime::open(planted(work, 30000));
  const std::optional<KernelVerdict> twin = runtime->verdict(ops::kFp8QuantTwinKernel);
  REQUIRE(twin);
  INFO(twin->refusal);
  CHECK(twin->verdict == ops::CheckVerdict::kFailed);
  CHECK_FALSE(twin->cacheable);  // a crash is not a statement about the kernel's numbers
  // Killed by SIGSEGV or SIGBUS; under AddressSanitizer its report ends the child with a status.
  CHECK(twin->refusal.find("it faulted: the check's process ") != std::string::npos);
  CHECK(runtime->kernel_handle(ops::kFp8QuantTwinKernel).value == 0);
  const std::optional<KernelVerdict> parent = runtime->verdict(ops::kFp8QuantSharedKernel);
  REQUIRE(parent);
  CHECK(parent->verdict == ops::CheckVerdict::kPassed);
  check_fp8_runs_parent(*runtime);
}

TEST_CASE("a check's child process hands back its bytes or names its timeout or its signal",
          "[runtime][verify][contained]") {
  HostBackendOptions options;
  options.worker_threads = 2;
  HostBackend backend(options);
  SECTION("bytes, including a large answer read while the child writes it") {
    const std::string big(std::size_t{1} << 20, 'v');
    const ChildResult done = run_in_child(
        backend, [&] { return std::string("rows:") + big; }, std::chrono::seconds(30));
    REQUIRE(done.bytes);
    CHECK(*done.bytes == "rows:" + big);
  }
  SECTION("past the limit the child is killed") {
    const auto start = std::chrono::steady_clock::now();
    const ChildResult late = run_in_child(
        backend,
        [] {
          for (;;) {
            std::this_thread::sleep_for(std::chrono::seconds(1));
          }
          return std::string();
        },
        std::chrono::milliseconds(300));
    CHECK(late.timed_out);
    CHECK_FALSE(late.bytes);
    CHECK(late.problem == "check exceeded 300 ms (its process was killed)");
    CHECK(ms_since(start) < 10000);
  }
  SECTION("a fault ends only the child and is named") {
    const ChildResult crashed = run_in_child(
        backend,
        [] {
          std::raise(SIGSEGV);
          return std::string("unreachable");
        },
        std::chrono::seconds(30));
    CHECK_FALSE(crashed.bytes);
    CHECK_FALSE(crashed.timed_out);
    INFO(crashed.problem);
    // By the signal; under AddressSanitizer (which keeps its own handler) its report's exit status.
    CHECK((crashed.problem.find("the check's process was killed by signal 11 (SIGSEGV") == 0 ||
           crashed.problem.find("the check's process exited with status") == 0));
  }
  SECTION("a lock another thread holds at the fork is free in the child") {
    // Another thread launches through the backend while the fork waits for its launch lock.
    std::vector<std::jthread> busy;
    busy.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        const DevicePtr ptr = backend.alloc(4096);
        backend.free(ptr);
      }
    });
    const ChildResult done = run_in_child(
        backend,
        [&] {
          const DevicePtr ptr = backend.alloc(64);  // the memory's lock, taken in the child
          backend.free(ptr);
          return std::string("ok");
        },
        std::chrono::seconds(30));
    REQUIRE(done.bytes);
    CHECK(*done.bytes == "ok");
  }
}

TEST_CASE("the cost of one check in a child process", "[.][bench][contained]") {
  HostBackendOptions options;
  options.worker_threads = 2;
  HostBackend backend(options);
  constexpr int kRounds = 200;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kRounds; ++i) {
    REQUIRE(run_in_child(
                backend, [] { return std::string("x"); }, std::chrono::seconds(30))
                .bytes);
  }
  WARN("fork + run nothing + pipe + reap: " << ms_since(start) / kRounds << " ms per check");
}
