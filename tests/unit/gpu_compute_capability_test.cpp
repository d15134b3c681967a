// Strict parsing of compute capabilities and the readable kernel-parameter tag.
#include <catch2/catch.hpp>

#include "metrale/gpu/compute_capability.hpp"
#include "metrale/gpu/kernel_params.hpp"

using metrale::parse_compute_capability;

TEST_CASE("compute capabilities parse strictly") {
  auto cc = parse_compute_capability("12.1");
  REQUIRE(cc.has_value());
  CHECK(cc->major == 12);
  CHECK(cc->minor == 1);
  CHECK(cc->str() == "12.1");
  CHECK(cc->sm_arch() == "sm_121");
  for (const char* bad : {"", "9", "9.", ".0", "9.0.1", "a.b", "9.x", "-9.0", "0.0", " 9.0", "9,0", "1234.0"}) {
    INFO(bad);
    CHECK_FALSE(parse_compute_capability(bad).has_value());
  }
}

TEST_CASE("kernel parameter tags leave out unused parameters") {
  CHECK(metrale::KernelParams{256, 64, 8}.tag() == "b256l64g8");
  CHECK(metrale::KernelParams{0, 16, 1}.tag() == "l16g1");
  CHECK(metrale::KernelParams{}.tag() == "default");
}
