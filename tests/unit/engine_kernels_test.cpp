// An engine's own kernels are first-class on the host backend: the test engine
// (tests/data/engine/test_engine.hpp, public headers only) declares a parent and a twin of its own
// template, the test target's HARDWARE.toml ships them by name, Runtime::open builds them with
// the library's kernels (the host compiling them at run time with the system compiler), and the
// engine's guard, made with the library's helper, names its reasons. A broken template is an
// absent handle whose reason quotes the compiler's line.
#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <functional>
#include <future>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "data/engine/test_engine.hpp"
#include "ref/bf16.hpp"
#include "support/isolated_runtime.hpp"
#include "support/temp_dir.hpp"

namespace {

const std::string kEngineData = std::string(METRALE_SOURCE_DIR) + "/tests/data/engine";

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A host runtime on the engine's test target, the JIT's objects in `cache`.
std::unique_ptr<metrale::Runtime> open_engine_runtime(const std::string& templates, const std::string& cache,
                                                      std::function<void()> background_gate = {}) {
  metrale::RuntimeOptions options =
      metrale::test::isolated_runtime_options(metrale::BackendChoice::kHost, 84, "engine_test");
  if (background_gate) {
    options.load_mode = metrale::LoadMode::kBackgroundTwins;
    options.registry->background_gate = std::move(background_gate);
  }
  options.host_worker_threads = 2;
  options.cache_dir = cache;
  options.env = [](const char* name) -> std::optional<std::string> {
    if (std::string_view(name) == "METRALE_HARDWARE_DIR") {
      return kEngineData + "/hardware";
    }
    return std::nullopt;
  };
  test_engine::add_kernels(options, read_text(templates + "/engine_mirror.cuh"));
  return metrale::Runtime::open(std::move(options));
}

std::vector<float> reference(const std::vector<float>& x, float s, std::uint32_t block) {
  std::vector<float> y(x.size());
  for (std::size_t c = 0; c < x.size() / block; ++c) {
    for (std::size_t t = 0; t < block; ++t) {
      y[c * block + t] = s * x[c * block + block - 1 - t];
    }
  }
  return y;
}

std::vector<float> download(metrale::GpuBackend& gpu, metrale::DevicePtr ptr, std::size_t count) {
  std::vector<float> out(count);
  gpu.copy_to_host(out.data(), ptr, count * sizeof(float));
  return out;
}

}  // namespace

TEST_CASE("an engine's parent and twin run on the host from source compiled at run time", "[engine][host]") {
  metrale::test::TempDir cache("metrale-engine-jit");
  auto runtime = open_engine_runtime(kEngineData + "/templates", cache.path().string());
  REQUIRE(runtime->has_device());
  // Built with the library's own kernel in the same open: all three are present.
  CHECK(runtime->kernel_handle(test_engine::kParent).present());
  CHECK(runtime->kernel_handle(test_engine::kTwin).present());
  CHECK(runtime->kernel_handle("ssm_ba_gates").present());
  for (const char* kernel : {test_engine::kParent, test_engine::kTwin}) {
    INFO(kernel);
    const auto record = runtime->registry().record(*runtime->variant_id(kernel), "host");
    REQUIRE(record.has_value());
    CHECK(record->load_error.empty());
  }

  metrale::GpuBackend& gpu = *runtime->backend();
  test_engine::MirrorScale engine(*runtime);
  constexpr std::uint32_t kBlock = 128;
  constexpr float kScale = -1.75F;
  struct Case {
    std::uint32_t chunks;
    bool lever;
    bool twin;
    std::string_view reason;
  };
  const Case cases[] = {
      {64, true, true, ""},
      {37, true, false, test_engine::kRaggedChunks},
      {4, true, false, test_engine::kTooFewChunks},
      {64, false, false, metrale::kGuardLeverOff},
  };
  for (const Case& c : cases) {
    INFO("chunks " << c.chunks << " lever " << c.lever);
    const std::vector<float> x = metrale::ref::random_floats(std::size_t{c.chunks} * kBlock, 100 + c.chunks, -4, 4);
    const metrale::DevicePtr in = metrale::test::upload(gpu, x);
    const metrale::DevicePtr out =
        metrale::test::upload(gpu, std::vector<float>(x.size(), std::numeric_limits<float>::quiet_NaN()));
    const metrale::GuardPick pick = engine.run(in, out, kScale, c.chunks, c.lever);
    CHECK(pick.twin == c.twin);
    CHECK(pick.reason == c.reason);
    const std::vector<float> got = download(gpu, out, x.size());
    const std::vector<float> want = reference(x, kScale, kBlock);
    REQUIRE(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
    gpu.free(in);
    gpu.free(out);
  }
}

TEST_CASE("an engine's broken template is an absent handle whose reason quotes the compiler", "[engine][host]") {
  metrale::test::TempDir cache("metrale-engine-jit-broken");
  auto runtime = open_engine_runtime(kEngineData + "/templates_broken", cache.path().string());
  CHECK_FALSE(runtime->kernel_handle(test_engine::kParent).present());
  CHECK_FALSE(runtime->kernel_handle(test_engine::kTwin).present());
  CHECK(runtime->kernel_handle("ssm_ba_gates").present());  // the library's kernels still load
  const auto record = runtime->registry().record(*runtime->variant_id(test_engine::kParent), "host");
  REQUIRE(record.has_value());
  INFO(record->load_error);
  CHECK_THAT(record->load_error, Catch::Contains("host JIT of engine_mirror<b128>") &&
                                     Catch::Contains("engine_mirror.cuh:6:") &&
                                     Catch::Contains("not_declared_anywhere"));
  // With the lever on, the guard sees the twin absent and says so.
  test_engine::MirrorScale engine(*runtime);
  CHECK(metrale::guard_pick(runtime->kernel_handle(test_engine::kTwin), true, {}).reason == metrale::kGuardTwinAbsent);
}

TEST_CASE("an engine's twin builds in the background of the same open, after the parents", "[engine][host]") {
  metrale::test::TempDir cache("metrale-engine-jit-background");
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  auto runtime =
      open_engine_runtime(kEngineData + "/templates", cache.path().string(), [released] { released.wait(); });
  // open() returned with the parents built (the engine's and the library's); the twin waits.
  CHECK(runtime->kernel_handle(test_engine::kParent).present());
  CHECK(runtime->kernel_handle("ssm_ba_gates").present());
  CHECK_FALSE(runtime->kernel_handle(test_engine::kTwin).present());
  test_engine::MirrorScale engine(*runtime);
  metrale::GpuBackend& gpu = *runtime->backend();
  const std::vector<float> x = metrale::ref::random_floats(64 * 128, 5, -2, 2);
  const metrale::DevicePtr in = metrale::test::upload(gpu, x);
  const metrale::DevicePtr out =
      metrale::test::upload(gpu, std::vector<float>(x.size(), std::numeric_limits<float>::quiet_NaN()));
  CHECK(engine.run(in, out, 2.0F, 64, true).reason == metrale::kGuardTwinAbsent);
  release.set_value();
  runtime->registry().wait_background();
  REQUIRE(runtime->kernel_handle(test_engine::kTwin).present());
  const metrale::GuardPick pick = engine.run(in, out, 2.0F, 64, true);
  CHECK(pick.twin);
  const std::vector<float> got = download(gpu, out, x.size());
  const std::vector<float> want = reference(x, 2.0F, 128);
  CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
  gpu.free(in);
  gpu.free(out);
}
