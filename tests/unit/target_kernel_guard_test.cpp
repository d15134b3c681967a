// target_kernel_guard_test.cpp: the guard helper engines use (metrale/target/levers.hpp): the
// verdict's order (lever, handle, each condition), and the once-per-outcome log line it gives.
#include <fmt/format.h>

#include <catch2/catch.hpp>

#include "metrale/error.hpp"
#include "metrale/target/levers.hpp"

TEST_CASE("the guard helper: lever, then handle, then each condition, logs count slots", "[target][guard]") {
  const metrale::KernelHandle present{3};
  CHECK(metrale::guard_pick(present, false, {{"a", true}}).reason == metrale::kGuardLeverOff);
  CHECK(metrale::guard_pick({}, true, {{"a", true}}).reason == metrale::kGuardTwinAbsent);
  CHECK(metrale::guard_pick(present, true, {{"a", true}, {"b", false}, {"c", false}}).reason == "b");
  const metrale::GuardPick twin = metrale::guard_pick(present, true, {{"a", true}, {"b", true}});
  CHECK(twin.twin);
  CHECK(twin.reason.empty());
  CHECK(metrale::first_failed({{"a", true}, {"b", false}, {"c", false}}) == "b");
  CHECK_FALSE(metrale::first_failed({{"a", true}}).has_value());
  CHECK_FALSE(metrale::first_failed({}).has_value());
  metrale::KernelGuard guard("g", 2);
  CHECK(guard.pick(present, true, {{"a", true}, {"b", false}}).reason == "b");
  CHECK_THROWS_AS(guard.pick(present, true, {{"a", true}}), metrale::ArgumentError);
}

TEST_CASE("the guard helper logs each outcome once: the twin, the lever, the handle, each condition",
          "[target][guard]") {
  const metrale::KernelHandle present{3};
  metrale::KernelGuard guard("engine_twin", 2);
  const auto line = [&](metrale::KernelHandle twin, bool lever, bool a, bool b) {
    return guard.decide(twin, lever, {{"a failed", a}, {"b failed", b}}).log_line;
  };
  CHECK(line(present, true, true, false) == "guard engine_twin: the parent runs (b failed)");
  CHECK_FALSE(line(present, true, true, false).has_value());  // the same outcome: said already
  CHECK(line(present, true, false, false) == "guard engine_twin: the parent runs (a failed)");
  CHECK(line(present, true, true, true) == "guard engine_twin: the twin runs");
  CHECK_FALSE(line(present, true, true, true).has_value());
  CHECK(line({}, true, true, true) ==
        fmt::format("guard engine_twin: the parent runs ({})", metrale::kGuardTwinAbsent));
  CHECK(line(present, false, true, true) ==
        fmt::format("guard engine_twin: the parent runs ({})", metrale::kGuardLeverOff));
  CHECK_FALSE(line({}, false, false, false).has_value());  // lever off again: its slot is taken
  // A second guard keeps its own slots.
  metrale::KernelGuard other("other", 2);
  CHECK(other.decide(present, true, {{"a", true}, {"b", true}}).log_line == "guard other: the twin runs");
}
