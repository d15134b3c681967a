// Target selection by compute capability, over the shipped targets.
#include "hardware/target_selection.hpp"

#include <catch2/catch.hpp>

#include "hardware/hardware_loader.hpp"
#include "metrale/error.hpp"
#include "ops/op_kernels.hpp"

using metrale::ComputeCapability;

TEST_CASE("a device's compute capability selects its target, else generic with its own arch", "[target]") {
  const auto targets =
      metrale::load_targets_from_files(metrale::embedded_hardware(), "<embedded>", metrale::ops::library_catalog());
  struct Case {
    ComputeCapability device;
    const char* target;
    const char* arch;
  };
  const Case cases[] = {
      {{9, 0}, "hopper", "sm_90"},    {{12, 1}, "gb10", "sm_121"},    {{10, 0}, "b200", "sm_100"},
      {{10, 3}, "b300", "sm_103"},    {{8, 9}, "generic", "sm_89"},   {{8, 0}, "generic", "sm_80"},
      {{12, 0}, "generic", "sm_120"}, {{9, 1}, "generic", "sm_91"},   {{7, 5}, "generic", "sm_75"},
      {{10, 1}, "generic", "sm_101"}, {{11, 0}, "generic", "sm_110"},
  };
  for (const auto& c : cases) {
    INFO(c.device.str());
    const auto chosen = metrale::select_target(targets, c.device);
    CHECK(chosen.name == c.target);
    CHECK(chosen.arch == c.arch);
  }
  // Generic keeps its device-derived SM count and the stored target stays untouched.
  CHECK_FALSE(metrale::select_target(targets, {8, 6}).sm_count.has_value());
  CHECK(metrale::find_target(targets, "generic")->arch.empty());
}

TEST_CASE("selection without a generic target is a named error, find_target misses cleanly", "[target]") {
  auto targets =
      metrale::load_targets_from_files(metrale::embedded_hardware(), "<embedded>", metrale::ops::library_catalog());
  CHECK(metrale::find_target(targets, "hopper2") == nullptr);
  std::erase_if(targets, [](const auto& t) { return !t.compute_capability; });
  CHECK(metrale::select_target(targets, {9, 0}).name == "hopper");
  CHECK_THROWS_AS(metrale::select_target(targets, {8, 9}), metrale::ConfigError);
  CHECK_THROWS_WITH(metrale::select_target(targets, {8, 9}), Catch::Contains("8.9") && Catch::Contains("generic"));
}
