// runtime_generic_on_request_test.cpp: with background variants (LoadMode::kBackgroundTwins), a
// kernel whose shapes are pinned has its generic form left out of open() (issue 26's cold start:
// the generic compiles slowest; kWaitForAll still builds it); the pinned variant runs its
// shape, an unpinned value the rule takes gets its own variant in the background (the guards'
// next kernel meanwhile, never the generic), a value the rule refuses asks for the generic form;
// RuntimeOptions::generic_at_open builds it at open; prepare builds what a capture will need.
// Host backend; outputs poisoned first and checked against the float64 oracle.
#include <catch2/catch.hpp>

#include "support/shape_variants_support.hpp"

using namespace metrale;
using namespace metrale::shape_test;

namespace {

// Hopper's shape with N = 130: past the tensor-core kernel's 128 outputs (its rule refuses it).
const ref::BaGatesRefShape kN130{264, 130, 512, 512, 130, 65, 5};

KernelHandle generic_handle(Runtime& runtime) { return variant_handle(runtime, kGeneric); }

// Background variants, as an engine that wants its first op early opens; then waits for the
// background batch (the twins and the pinned variants), so what follows sees it published.
std::unique_ptr<Runtime> open_background(const HardwareDir& hardware, bool generic_at_open = false) {
  RuntimeOptions options = options_for(hardware);
  options.load_mode = LoadMode::kBackgroundTwins;
  options.generic_at_open = generic_at_open;
  auto runtime = Runtime::open(std::move(options));
  runtime->registry().wait_background();
  return runtime;
}

bool generic_on_request(Runtime& runtime) {
  const auto id = runtime.registry().find(kMma, kGeneric);
  return id && runtime.registry().loads_only_on_request(*id);
}

}  // namespace

TEST_CASE("runtime shapes: with N pinned, open builds the pinned variant and leaves the generic form",
          "[runtime][shape]") {
  const HardwareDir hardware("ssm_ba_gates.n = [96]");
  auto runtime = open_background(hardware);
  REQUIRE(variant_handle(*runtime, kSix).present());
  CHECK(generic_on_request(*runtime));
  CHECK_FALSE(generic_handle(*runtime).present());

  const BaCase c96 = BaCase::normal(kShape, 9601);
  const Call pinned = run_ba(*runtime, c96);
  CHECK(pinned.pick.kernel == kMma);
  CHECK(pinned.pick.handle == variant_handle(*runtime, kSix));
  check_output(c96, pinned.out);

  // An unpinned N the rule takes: its own variant is asked for, the twin or parent runs meanwhile.
  const BaCase c48 = BaCase::normal(kN48, 4801);
  const Call first = run_ba(*runtime, c48);
  CHECK(first.pick.kernel != kMma);
  check_output(c48, first.out);
  runtime->registry().wait_background();
  REQUIRE(variant_handle(*runtime, kThree).present());
  CHECK_FALSE(generic_handle(*runtime).present());  // not asked for: the variant serves N = 48
  const Call second = run_ba(*runtime, c48);
  CHECK(second.pick.handle == variant_handle(*runtime, kThree));
  check_output(c48, second.out);

  // A value the rule refuses runs the generic form: the first sight asks for it.
  const BaCase c130 = BaCase::normal(kN130, 13001);
  const Call wide = run_ba(*runtime, c130);
  CHECK(wide.pick.kernel != kMma);
  check_output(c130, wide.out);
  runtime->registry().wait_background();
  CHECK(generic_handle(*runtime).present());
}

TEST_CASE(
    "runtime shapes: generic_at_open, or waiting for every variant, builds the generic form beside the pinned one",
    "[runtime][shape]") {
  const HardwareDir hardware("ssm_ba_gates.n = [96]");
  {
    auto runtime = open_background(hardware, true);
    CHECK(variant_handle(*runtime, kSix).present());
    CHECK(generic_handle(*runtime).present());
    CHECK_FALSE(generic_on_request(*runtime));
  }
  // Waiting for everything (the default load mode) builds it whatever generic_at_open says.
  auto runtime = Runtime::open(options_for(hardware));
  CHECK(variant_handle(*runtime, kSix).present());
  CHECK(generic_handle(*runtime).present());
  CHECK_FALSE(generic_on_request(*runtime));
}

TEST_CASE("runtime shapes: prepare builds the variant an unpinned N takes before it returns",
          "[runtime][shape][capture]") {
  const HardwareDir hardware("ssm_ba_gates.n = [96]");
  auto runtime = open_background(hardware);
  REQUIRE_FALSE(variant_handle(*runtime, kThree).present());
  const std::vector<ops::Pick> picks = runtime->prepare(kOp, shape_of(kN48));
  REQUIRE_FALSE(picks.empty());
  CHECK(picks.front().kernel == kMma);  // the guards' pick at N 48, with its variant built
  CHECK(variant_handle(*runtime, kThree).present());
  CHECK_FALSE(generic_handle(*runtime).present());
  // Forcing the tensor-core role at a value with no variant yet builds it for that call.
  const BaCase c80 = BaCase::normal({264, 80, 512, 512, 80, 40, 5}, 8001);
  REQUIRE_FALSE(variant_handle(*runtime, KernelParams{256, 128, 6, 5}).present());
  const Call forced = run_ba(*runtime, c80, "mma");
  CHECK(forced.pick.kernel == kMma);
  CHECK(forced.pick.handle == variant_handle(*runtime, KernelParams{256, 128, 6, 5}));
  check_output(c80, forced.out);
}
