// tests/support/hopper_target.hpp: the embedded hopper target with the library's catalog, loaded
// once per test binary (the profile tests price on its [roofline]).
#pragma once

#include <catch2/catch.hpp>

#include "hardware/hardware_loader.hpp"
#include "hardware/target_selection.hpp"
#include "ops/op_kernels.hpp"

namespace metrale::test {

inline const HardwareTarget& hopper_target() {
  static const auto targets = load_targets(ops::library_catalog());
  const auto* target = find_target(targets, "hopper");
  REQUIRE(target != nullptr);
  return *target;
}

}  // namespace metrale::test
