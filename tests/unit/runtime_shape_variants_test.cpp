// runtime_shape_variants_test.cpp: shape-specialised variants on the runtime (host backend), issue
// 26: a value first met by a call is built in the background while the generic kernel runs, and
// the next call takes the specialised variant; a call during a graph capture never asks for a
// build; a pinned shape ([shapes], RuntimeOptions::shapes) is built at open; a value the rule
// refuses stays generic with its reason; bad pins are errors naming where they came from.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <sstream>

#include "host/host_backend.hpp"
#include "metrale/error.hpp"
#include "ops/ssm_ba_gates_mma_guard.hpp"
#include "support/build_gate.hpp"
#include "support/kernels_support.hpp"
#include "support/temp_dir.hpp"
#include "target/hardware_loader.hpp"

using namespace metrale;
using kernels_test::BaCase;
using kernels_test::DeviceBuffer;

namespace {

constexpr const char* kOp = "ssm_ba_gates";
constexpr const char* kMma = "ssm_ba_gates_mma";

std::string shipped(const char* target) {
  std::ifstream in(std::string(METRALE_SOURCE_DIR) + "/hardware/" + target + "/HARDWARE.toml");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A hardware folder whose hopper has `shapes` as its [shapes] table ("" for none).
struct HardwareDir {
  test::TempDir dir;
  explicit HardwareDir(const std::string& shapes) {
    std::string hopper = shipped("hopper");
    const std::size_t begin = hopper.find("[shapes]\n");
    const std::size_t end = hopper.find("[roofline]\n");
    REQUIRE(begin != std::string::npos);
    hopper.replace(begin, end - begin, shapes.empty() ? "" : "[shapes]\n" + shapes + "\n\n");
    dir.write("hopper/HARDWARE.toml", hopper);
    dir.write("generic/HARDWARE.toml", shipped("generic"));
  }
};

RuntimeOptions options_for(const HardwareDir& hardware, std::function<void()> gate = {}) {
  RuntimeOptions options = test::isolated_runtime_options(BackendChoice::kHost, 132, "hopper");
  const std::string dir = hardware.dir.path().string();
  options.env = [dir](const char* name) -> std::optional<std::string> {
    return std::string(name) == kHardwareDirEnv ? std::optional<std::string>(dir) : std::nullopt;
  };
  options.registry->background_gate = std::move(gate);
  return options;
}

// The host backend, answering is_capturing from a flag the test sets.
class CapturingHost final : public GpuBackend {
 public:
  bool capturing = false;
  std::string describe() const override { return "capturing " + host_.describe(); }
  std::string device_key() const override { return host_.device_key(); }
  bool needs_compiled_image() const override { return false; }
  std::optional<std::uint32_t> sm_count() const override { return host_.sm_count(); }
  std::optional<ComputeCapability> compute_capability() const override { return host_.compute_capability(); }
  std::optional<std::uint32_t> max_dynamic_shared_bytes() const override { return host_.max_dynamic_shared_bytes(); }
  std::optional<std::uint32_t> max_active_clusters(KernelHandle kernel, const LaunchConfig& config) override {
    return host_.max_active_clusters(kernel, config);
  }
  KernelHandle load(const LoadRequest& request) override { return host_.load(request); }
  void launch(KernelHandle kernel, const LaunchConfig& config, std::span<const KernelArg> args) override {
    host_.launch(kernel, config, args);
  }
  DevicePtr alloc(std::size_t bytes) override { return host_.alloc(bytes); }
  void free(DevicePtr ptr) override { host_.free(ptr); }
  void copy_to_device(DevicePtr dst, const void* src, std::size_t bytes) override {
    host_.copy_to_device(dst, src, bytes);
  }
  void copy_to_host(void* dst, DevicePtr src, std::size_t bytes) override { host_.copy_to_host(dst, src, bytes); }
  void synchronize(std::uint64_t stream) override { host_.synchronize(stream); }
  bool is_capturing(std::uint64_t /*stream*/) const override { return capturing; }

 private:
  HostBackend host_{};  // 132 SMs by default, as the tensor-core shape below assumes
};

// One BA call by name at a tensor-core shape (M 264 on 132 SMs), its output poisoned first.
struct Call {
  ops::Pick pick;
  std::vector<float> out;
};

Call run_ba(Runtime& runtime, const BaCase& c) {
  GpuBackend& gpu = *runtime.backend();
  const auto& s = c.shape;
  DeviceBuffer x(gpu, c.x), w(gpu, c.w), a_log(gpu, c.a_log), dt_bias(gpu, c.dt_bias);
  DeviceBuffer out(gpu, std::vector<float>(c.out_size(), kernels_test::poison_float()));
  const ops::NamedArg args[] = {{"x", x.ptr().address},
                                {"weight", w.ptr().address},
                                {"a_log", a_log.ptr().address},
                                {"dt_bias", dt_bias.ptr().address},
                                {"gate_out", out.ptr().address},
                                {"m", s.m},
                                {"n", s.n},
                                {"k", s.k},
                                {"k_stride", s.k_stride},
                                {"gate_stride", s.gate_stride},
                                {"nv", s.nv},
                                {"vheads_per_group", s.vheads_per_group}};
  Call call{runtime.run(kOp, args), {}};
  call.out = out.read<float>(c.out_size());
  return call;
}

std::vector<ops::NamedArg> shape_of(const ref::BaGatesRefShape& s) {
  return {{"m", s.m}, {"n", s.n}, {"k", s.k}, {"vheads_per_group", s.vheads_per_group}};
}

KernelHandle variant_handle(Runtime& runtime, const KernelParams& params) {
  const auto id = runtime.registry().find(kMma, params);
  const auto device = runtime.registry().device_index(*runtime.backend());
  return id && device ? runtime.registry().handle(*device, *id) : KernelHandle{};
}

constexpr KernelParams kSix{256, 128, 6, 6};
const ref::BaGatesRefShape kShape{264, 96, 512, 512, 96, 48, 3};

void check_output(const BaCase& c, const std::vector<float>& out) {
  const kernels_test::BaCoverage coverage = kernels_test::ba_coverage(c.shape, out);
  CHECK(coverage.unwritten == 0);
  const double error = kernels_test::ba_relative_frobenius_error(c.shape, out, c.oracle());
  INFO("relative Frobenius error against the float64 oracle: " << error);
  CHECK(error < metrale::check::kBaGatesMmaMaxRelativeFrobenius);
}

}  // namespace

TEST_CASE("runtime shapes: a value first met is built in the background, the next call takes it", "[runtime][shape]") {
  const HardwareDir hardware("");
  std::unique_ptr<Runtime> runtime;
  // Declared after the runtime, so a failing check releases the held build before the runtime
  // waits for it.
  test::BuildGate gate;
  runtime = Runtime::open(options_for(hardware, gate.hold()));
  REQUIRE(runtime->registry().find(kMma, kSix) == std::nullopt);  // nothing pinned
  const KernelHandle generic = runtime->kernel_handle(kMma);
  REQUIRE(generic.present());
  const BaCase c = BaCase::normal(kShape, 9500);

  const Call first = run_ba(*runtime, c);
  CHECK(first.pick.kernel == kMma);
  CHECK(first.pick.handle.value == generic.value);  // the gate holds the build: the generic ran
  REQUIRE(runtime->registry().find(kMma, kSix).has_value());
  const auto waiting = runtime->shape_variants(kOp, shape_of(kShape));
  REQUIRE(waiting.size() == 1);
  CHECK(waiting[0].shape == 6);
  CHECK_FALSE(waiting[0].published);
  check_output(c, first.out);

  gate.open();
  runtime->registry().wait_background();
  const KernelHandle six = variant_handle(*runtime, kSix);
  REQUIRE(six.present());
  CHECK(six.value != generic.value);
  CHECK(runtime->shape_variants(kOp, shape_of(kShape))[0].published);
  const Call second = run_ba(*runtime, c);
  CHECK(second.pick.handle.value == six.value);
  check_output(c, second.out);
  CHECK(std::memcmp(first.out.data(), second.out.data(), first.out.size() * sizeof(float)) == 0);
}

TEST_CASE("runtime shapes: a call during a capture never asks for a build", "[runtime][shape]") {
  const HardwareDir hardware("");
  auto backend = std::make_unique<CapturingHost>();
  CapturingHost& host = *backend;
  auto runtime = Runtime::open_with(std::move(backend), options_for(hardware));
  const BaCase c = BaCase::normal(kShape, 9600);
  // A capture runs only what prepare made ready (issue 25): the generic tensor-core kernel here.
  REQUIRE_FALSE(runtime->prepare(kOp, shape_of(kShape)).empty());
  host.capturing = true;
  for (int i = 0; i < 2; ++i) {
    const Call call = run_ba(*runtime, c);
    CHECK(call.pick.handle.value == runtime->kernel_handle(kMma).value);
    check_output(c, call.out);
  }
  runtime->registry().wait_background();
  CHECK_FALSE(runtime->registry().find(kMma, kSix).has_value());  // never declared, never built
  host.capturing = false;
  (void)run_ba(*runtime, c);
  runtime->registry().wait_background();
  CHECK(variant_handle(*runtime, kSix).present());
}

TEST_CASE("runtime shapes: a pinned shape is built at open and taken by the first call", "[runtime][shape]") {
  SECTION("from the target's [shapes]") {
    const HardwareDir hardware("ssm_ba_gates.n = [96]");
    auto runtime = Runtime::open(options_for(hardware));
    REQUIRE(variant_handle(*runtime, kSix).present());
    const BaCase c = BaCase::normal(kShape, 9700);
    const Call call = run_ba(*runtime, c);
    CHECK(call.pick.handle.value == variant_handle(*runtime, kSix).value);
    check_output(c, call.out);
  }
  SECTION("from RuntimeOptions::shapes, by the op's alias") {
    const HardwareDir hardware("");
    RuntimeOptions options = options_for(hardware);
    options.shapes["ba-gates.n"] = {90};  // 90 outputs are 6 tiles too
    auto runtime = Runtime::open(std::move(options));
    CHECK(variant_handle(*runtime, kSix).present());
  }
}

TEST_CASE("runtime shapes: a value the kernel cannot take stays generic with its reason", "[runtime][shape]") {
  const HardwareDir hardware("ssm_ba_gates.n = [96, 130]");
  auto runtime = Runtime::open(options_for(hardware));  // 130 is logged, not an error
  CHECK(variant_handle(*runtime, kSix).present());
  const auto states = runtime->shape_variants(kOp, shape_of({264, 130, 512, 512, 130, 65, 5}));
  REQUIRE(states.size() == 1);
  CHECK(states[0].role == "tensor_core");
  CHECK(states[0].arg == "n");
  CHECK(states[0].shape == 0);
  CHECK(states[0].refusal == ops::kMmaShapeTooWide);
  CHECK(states[0].params.shape == 0);
}

TEST_CASE("runtime shapes: a pin naming no shape constant is an error naming where it came from", "[runtime][shape]") {
  {
    const HardwareDir hardware("ssm_ba_gates.k = [96]");
    CHECK_THROWS_WITH(Runtime::open(options_for(hardware)),
                      Catch::Contains("HARDWARE.toml:") && Catch::Contains("shapes.ssm_ba_gates.k") &&
                          Catch::Contains("has no shape constant 'k' (it has: n)"));
  }
  {
    const HardwareDir hardware("no_such_op.n = [96]");
    CHECK_THROWS_WITH(Runtime::open(options_for(hardware)), Catch::Contains("no op named 'no_such_op'"));
  }
  {
    const HardwareDir hardware("ssm_ba_gates.n = [96, 96]");
    CHECK_THROWS_WITH(Runtime::open(options_for(hardware)),
                      Catch::Contains("shapes.ssm_ba_gates.n: 96 is listed twice"));
  }
  {
    const HardwareDir hardware("ssm_ba_gates.n = 96");
    CHECK_THROWS_WITH(Runtime::open(options_for(hardware)), Catch::Contains("shapes.ssm_ba_gates.n: wrong type"));
  }
  const HardwareDir hardware("");
  RuntimeOptions options = options_for(hardware);
  options.shapes["n"] = {96};
  CHECK_THROWS_WITH(Runtime::open(std::move(options)), Catch::Contains("key 'n' is not <op>.<argument>"));
}

// Verification covers the specialised variant too (issue 25 with 26): it is checked in its role's
// place, at the N its tile count takes, before its handle is published, and its verdict is kept.
TEST_CASE("runtime shapes: a pinned variant is verified before it is published", "[runtime][shape][verify]") {
  const HardwareDir hardware("ssm_ba_gates.n = [96]");
  RuntimeOptions options = options_for(hardware);
  options.verify = true;
  options.verify_time_limit_ms = 180000;
  auto runtime = Runtime::open(std::move(options));
  REQUIRE(variant_handle(*runtime, kSix).present());
  const std::vector<KernelVerdict> verdicts = runtime->verdicts();
  const auto six = std::find_if(verdicts.begin(), verdicts.end(), [](const KernelVerdict& verdict) {
    return verdict.kernel == kMma && verdict.params == kSix.tag();
  });
  REQUIRE(six != verdicts.end());
  INFO(six->check << " / " << six->worst);
  CHECK(six->verdict == ops::CheckVerdict::kPassed);
  CHECK(six->check.find("N=96") != std::string::npos);
  CHECK(six->check.find("N=64") == std::string::npos);  // only the N its 6 tiles take
}
