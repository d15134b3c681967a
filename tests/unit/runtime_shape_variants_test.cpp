// runtime_shape_variants_test.cpp: shape-specialised variants on the runtime (host backend), issue
// 26: a value first met by a call is built in the background while the generic kernel runs, and
// the next call takes the specialised variant; a call during a graph capture never asks for a
// build; a pinned shape ([shapes], RuntimeOptions::shapes) is built at open; a value the rule
// refuses stays generic with its reason; bad pins are errors naming where they came from.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>

#include "metrale/error.hpp"
#include "ops/op_capture.hpp"
#include "ops/ssm_ba_gates/ssm_ba_gates.hpp"
#include "support/build_gate.hpp"
#include "support/shape_variants_support.hpp"

using namespace metrale;
using namespace metrale::shape_test;

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
  CHECK(first.pick.shape == 0);                     // and the pick says it was the generic form
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
  CHECK(second.pick.shape == 6);  // the pick names the variant that ran
  check_output(c, second.out);
  CHECK(std::memcmp(first.out.data(), second.out.data(), first.out.size() * sizeof(float)) == 0);
}

TEST_CASE("runtime shapes: a capture takes the variant prepare built at its shape, and never asks for a build",
          "[runtime][shape][capture]") {
  const HardwareDir hardware("");  // nothing pinned: the generic form is built at open
  auto backend = std::make_unique<CapturingHost>();
  CapturingHost& host = *backend;
  auto runtime = Runtime::open_with(std::move(backend), options_for(hardware));
  REQUIRE(runtime->kernel_handle(kMma).present());
  const BaCase c96 = BaCase::normal(kShape, 9600);
  const BaCase c48 = BaCase::normal(kN48, 4800);
  // prepare builds the variant N = 96 takes before it returns (no background build to wait for).
  REQUIRE_FALSE(runtime->prepare(kOp, shape_of(kShape)).empty());
  const KernelHandle six = variant_handle(*runtime, kSix);
  REQUIRE(six.present());
  host.capturing = true;
  for (int i = 0; i < 2; ++i) {
    const Call at96 = run_ba(*runtime, c96);
    CHECK(at96.pick.handle == six);
    check_output(c96, at96.out);
    // N = 48's variant was never prepared, nor built; prepare readied the 6-tile variant in the
    // generic form's place, so the tensor-core role is declined and the prepared twin runs it.
    const Call at48 = run_ba(*runtime, c48);
    CHECK(at48.pick.kernel != kMma);
    REQUIRE(at48.pick.verdict("tensor_core") != nullptr);
    CHECK(at48.pick.verdict("tensor_core")->reason == ops::kNotPreparedForCapture);
    check_output(c48, at48.out);
  }
  runtime->registry().wait_background();
  CHECK_FALSE(runtime->registry().find(kMma, kThree).has_value());  // never declared, never built
  host.capturing = false;
  (void)run_ba(*runtime, c48);
  runtime->registry().wait_background();
  CHECK(variant_handle(*runtime, kThree).present());
}

TEST_CASE("runtime shapes: a pinned shape is built at open and taken by the first call", "[runtime][shape]") {
  SECTION("from the target's [shapes]") {
    const HardwareDir hardware("ssm_ba_gates.n = [96]");
    auto runtime = Runtime::open(options_for(hardware));
    REQUIRE(variant_handle(*runtime, kSix).present());
    const BaCase c = BaCase::normal(kShape, 9700);
    const Call call = run_ba(*runtime, c);
    CHECK(call.pick.handle.value == variant_handle(*runtime, kSix).value);
    CHECK(call.pick.shape == 6);
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
