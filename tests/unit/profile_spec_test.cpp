// profile_spec_test.cpp: an op declared as data is priced from its declaration alone
// (src/ops/op_spec_profile.cpp): fp8_act_quant re-declared as data (support/fp8_as_data.hpp) gives,
// kernel by kernel, the library op's traffic, prediction and compulsory bytes on hopper; a spec the
// profile cannot size is refused naming the argument.
#include <catch2/catch.hpp>

#include "hardware/hardware_loader.hpp"
#include "hardware/target_selection.hpp"
#include "metrale/error.hpp"
#include "metrale/ops/op_declaration.hpp"
#include "ops/op_kernels.hpp"
#include "ops/op_spec.hpp"
#include "profile/op_profile.hpp"
#include "support/fp8_as_data.hpp"
#include "support/hopper_target.hpp"

namespace {

const metrale::HardwareTarget& hopper() { return metrale::test::hopper_target(); }

std::vector<metrale::KernelProfile> profile(const metrale::ops::OpDeclaration& op, std::uint32_t m, std::uint32_t k) {
  metrale::ProfileRequest request;
  request.op = &op;
  request.shape = {m, 0, k, 0};
  request.worker_threads = 2;
  return metrale::profile_op(hopper(), request);
}

}  // namespace

TEST_CASE("an op declared as data is priced as the library's op of the same kernels", "[profile][spec]") {
  const metrale::ops::BuiltOp built = metrale::ops::build_op(metrale::test::fp8_as_data_spec());
  REQUIRE(built.op.profile != nullptr);
  for (const auto& [m, k] : {std::pair{264U, 5120U}, std::pair{5U, 1024U}}) {
    INFO("M=" << m << " K=" << k);
    const auto declared = profile(built.op, m, k);
    const auto library = profile(metrale::ops::library_ops().get("fp8_act_quant"), m, k);
    REQUIRE(declared.size() == 2);
    REQUIRE(library.size() == declared.size());
    CHECK(declared[0].role == "parent");
    CHECK(declared[1].role == "twin");
    CHECK(declared[0].op == "fp8_act_quant_data");
    for (std::size_t i = 0; i < declared.size(); ++i) {
      INFO(declared[i].kernel);
      CHECK(declared[i].kernel == library[i].kernel);
      CHECK(declared[i].params == library[i].params);
      CHECK(declared[i].traffic.total_blocks == library[i].traffic.total_blocks);
      CHECK(declared[i].traffic.dram_bytes() == library[i].traffic.dram_bytes());
      CHECK(declared[i].traffic.l2_bytes() == library[i].traffic.l2_bytes());
      CHECK(declared[i].prediction.predicted_us == library[i].prediction.predicted_us);
      // Every tensor's declared bytes once: x bf16, q e4m3, one fp32 scale per 128.
      CHECK(declared[i].compulsory_bytes == library[i].compulsory_bytes);
      CHECK(declared[i].compulsory_bytes == double(m) * k * 2 + double(m) * k + double(m) * (k / 128) * 4);
    }
  }
}

TEST_CASE("the profile of an op declared as data refuses what it cannot size, naming it", "[profile][spec]") {
  metrale::ops::OpSpec spec = metrale::test::fp8_as_data_spec();
  // A required scalar the profile's shape does not name.
  spec.args.push_back(metrale::ops::scalar_arg("experts", std::nullopt, 64, "a size the profile does not give"));
  const metrale::ops::BuiltOp no_fallback = metrale::ops::build_op(spec);
  CHECK_THROWS_WITH(profile(no_fallback.op, 16, 1024),
                    Catch::Contains("its argument 'experts' has no fallback") && Catch::Contains("fp8_act_quant_data"));
  // A shape its rules refuse is refused with the rule, before anything launches.
  const metrale::ops::BuiltOp built = metrale::ops::build_op(metrale::test::fp8_as_data_spec());
  CHECK_THROWS_WITH(profile(built.op, 16, 1000), Catch::Contains("K is not a multiple of the group size 128"));
  // A tensor with no dims.
  metrale::ops::OpSpec undimensioned = metrale::test::fp8_as_data_spec();
  undimensioned.args[2].dims.clear();
  const metrale::ops::BuiltOp any_shape = metrale::ops::build_op(undimensioned);
  CHECK_THROWS_WITH(profile(any_shape.op, 16, 1024), Catch::Contains("tensor 'scales' declares no dims"));
}
