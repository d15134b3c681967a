// The profile prices a kernel's shape-specialised variant beside its generic one (issue 26): the
// op declaration's shape constant at the profiled value gives the variant (N = 96: the
// tensor-core kernel's 6 output tiles), priced in its own row with the same compulsory DRAM
// bytes and FLOPs as the generic (counted here from the op's sizes, not copied between rows); a
// value the rule refuses prices the generic alone and carries the rule's reason; the specialised
// variant's registers are ptxas's for its own program; one the host cannot build is left out with
// a note, the generic row kept.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hardware/hardware_loader.hpp"
#include "hardware/target_selection.hpp"
#include "metrale/error.hpp"
#include "metrale/ops/op_declaration.hpp"
#include "ops/op_kernels.hpp"
#include "ops/ssm_ba_gates/ssm_ba_gates.hpp"
#include "profile/op_profile.hpp"
#include "profile/profile_json.hpp"
#include "profile/shape_variants.hpp"
#include "profile/target_resources.hpp"
#include "support/hopper_target.hpp"
#include "support/scoped_env.hpp"
#include "support/temp_dir.hpp"

namespace {

const metrale::HardwareTarget& hopper() { return metrale::test::hopper_target(); }

const metrale::ops::OpDeclaration& ba_gates() { return metrale::ops::library_ops().get("ssm_ba_gates"); }

// The tensor-core kernel alone, every block run, at `shape`, with `constants` asked for.
metrale::ProfileRequest mma_request(const metrale::ProfileShape& shape,
                                    std::vector<metrale::ProfiledShapeConstant> constants) {
  metrale::ProfileRequest request;
  request.op = &metrale::ops::library_ops().get("ssm_ba_gates");
  request.shape = shape;
  request.kernels = {"mma"};
  request.full_grid = true;
  request.wave_blocks = 1;
  request.worker_threads = 2;
  request.shape_constants = std::move(constants);
  return request;
}

std::vector<metrale::KernelProfile> profile_mma(const metrale::ProfileShape& shape,
                                                std::vector<metrale::ProfiledShapeConstant> constants) {
  return metrale::profile_op(hopper(), mma_request(shape, std::move(constants)));
}

// The op's compulsory DRAM bytes, from its tensors: x [M][K] and W [N][K] in bf16 read, gate_out
// [M][N] in fp32 written, a_log and dt_bias fp32 [N / 2] read.
double ba_compulsory_bytes(double m, double n, double k) { return m * k * 2 + n * k * 2 + m * n * 4 + 2 * (n / 2) * 4; }

// The tensor-core kernel's MMAs: per tile of 128 tokens, 8 token tiles of 16 x ceil(N / 16)
// output tiles x K / 16 k-steps, 2 x 16^3 FLOPs each (idle token rows are computed too).
double mma_tensor_flops(std::uint32_t m, std::uint32_t n, std::uint32_t k) {
  const double token_blocks = (m + 127) / 128;
  return token_blocks * 8 * ((n + 15) / 16) * (k / 16) * 2.0 * 16 * 16 * 16;
}

}  // namespace

TEST_CASE("profile: at N = 96 the tensor-core kernel is priced generic and specialised on the same traffic",
          "[profile][shape]") {
  const std::uint32_t m = 256, n = 96, k = 1024;
  const metrale::ProfileShape shape{m, n, k, 0};
  const auto constants = metrale::profile_shape_constants(hopper(), ba_gates(), shape, true);
  REQUIRE(constants.size() == 1);
  CHECK(constants[0].role == "tensor_core");
  CHECK(constants[0].kernel == metrale::ops::kBaGatesMmaKernel);
  CHECK(constants[0].arg == "n");
  CHECK(constants[0].value == 96);
  CHECK(constants[0].shape == 6);  // ceil(96 / 16) output tiles
  CHECK(constants[0].reason.empty());
  CHECK(metrale::shape_constant_note(constants[0]).empty());

  const auto rows = profile_mma(shape, constants);
  REQUIRE(rows.size() == 2);
  const metrale::KernelParams generic = hopper().find_kernel(metrale::ops::kBaGatesMmaKernel)->params;
  CHECK(generic.shape == 0);
  CHECK(rows[0].params == generic);
  CHECK_FALSE(rows[0].specialised());
  metrale::KernelParams specialised = generic;
  specialised.shape = 6;
  CHECK(rows[1].params == specialised);
  CHECK(rows[1].specialised());
  CHECK(rows[1].params.tag() == generic.tag() + "s6");

  const double compulsory = ba_compulsory_bytes(m, n, k);
  const double tensor_flops = mma_tensor_flops(m, n, k);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    INFO("row " << i << ": " << rows[i].params.tag());
    const nlohmann::json json = metrale::profile_row_json(rows[i], "hopper");
    CHECK(json["kernel"] == metrale::ops::kBaGatesMmaKernel);
    CHECK(json["params"] == rows[i].params.tag());
    CHECK(json["variant"] == (i == 0 ? "generic" : "specialised"));
    CHECK(json["shape"] == (i == 0 ? nlohmann::json(nullptr) : nlohmann::json(6)));
    CHECK(json["shape_constant"]["arg"] == "n");
    CHECK(json["shape_constant"]["value"] == 96);
    CHECK(json["shape_constant"]["shape"] == 6);
    CHECK(json["shape_constant"]["reason"].is_null());
    // Every block run: the kernel reads its inputs and writes its outputs exactly once.
    CHECK(json["compulsory_bytes"].get<double>() == compulsory);
    CHECK(json["dram_bytes"].get<double>() == compulsory);
    CHECK(json["tensor_flops"].get<double>() == tensor_flops);
    CHECK(json["flops"].get<double>() >= tensor_flops);
    CHECK(json["predicted_us"].get<double>() > 0);
    // The bench's key: metrale-ops-bench names the specialised row "mma_s6", the generic "mma".
    CHECK(json["bench_key"]["kernel"] == (i == 0 ? "mma" : "mma_s6"));
    CHECK(json["bench_key"]["n"] == 96);
  }
  // The epilogue's work is the same per output whichever loop the K reduction ran in.
  CHECK(metrale::profile_row_json(rows[1], "hopper")["flops"] == metrale::profile_row_json(rows[0], "hopper")["flops"]);
  CHECK(rows[1].traffic.flops == rows[0].traffic.flops);
  CHECK(rows[1].traffic.special_functions == rows[0].traffic.special_functions);
  CHECK(rows[1].prediction.predicted_us == Approx(rows[0].prediction.predicted_us).epsilon(1e-9));
}

TEST_CASE("profile: a value the shape rule refuses prices the generic row alone, with the rule's reason",
          "[profile][shape]") {
  // The library's rule: N > 128 is past the tensor-core kernel's 8 output tiles.
  const auto wide = metrale::profile_shape_constants(hopper(), ba_gates(), {8192, 144, 5120, 0}, true);
  REQUIRE(wide.size() == 1);
  CHECK(wide[0].value == 144);
  CHECK(wide[0].shape == 0);
  CHECK_THAT(wide[0].reason, Catch::Contains("N > 128"));
  CHECK_THAT(metrale::shape_constant_note(wide[0]),
             Catch::StartsWith("note: ssm_ba_gates_mma at n = 144 stays generic") && Catch::Contains("N > 128"));
  // ... and at N = 128, the last value it takes, eight tiles.
  const auto widest = metrale::profile_shape_constants(hopper(), ba_gates(), {8192, 128, 5120, 0}, true);
  REQUIRE(widest.size() == 1);
  CHECK(widest[0].shape == 8);

  // The generic kernel itself takes no N past 128, so the refusal is priced on an op whose rule
  // refuses a value the kernel runs: the library's declaration with another rule.
  metrale::ops::OpDeclaration refusing = ba_gates();
  REQUIRE(refusing.shape_constants.size() == 1);
  refusing.shape_constants[0].rule = [](std::uint64_t value) {
    return metrale::ops::ShapeChoice{0, value == 96 ? "the test's rule refuses 96" : "unexpected value"};
  };
  const metrale::ProfileShape shape{128, 96, 256, 0};
  const auto constants = metrale::profile_shape_constants(hopper(), refusing, shape, true);
  REQUIRE(constants.size() == 1);
  CHECK(constants[0].shape == 0);
  CHECK(constants[0].reason == "the test's rule refuses 96");
  const auto rows = profile_mma(shape, constants);
  REQUIRE(rows.size() == 1);
  CHECK_FALSE(rows[0].specialised());
  const nlohmann::json json = metrale::profile_row_json(rows[0], "hopper");
  CHECK(json["variant"] == "generic");
  CHECK(json["shape"].is_null());
  CHECK(json["shape_constant"]["value"] == 96);
  CHECK(json["shape_constant"]["shape"].is_null());
  CHECK(json["shape_constant"]["reason"] == "the test's rule refuses 96");
  CHECK(json["dram_bytes"].get<double>() == ba_compulsory_bytes(128, 96, 256));
  CHECK(json["tensor_flops"].get<double>() == mma_tensor_flops(128, 96, 256));
}

TEST_CASE("profile: shape constants the profile cannot price say why, and kernels without one stay single",
          "[profile][shape]") {
  metrale::ops::OpDeclaration op = ba_gates();
  REQUIRE(op.shape_constants.size() == 1);
  // An argument the profile's shape has no value for.
  op.shape_constants[0].arg = "gate_stride";
  const auto unpriced = metrale::profile_shape_constants(hopper(), op, {64, 96, 512, 0}, true);
  REQUIRE(unpriced.size() == 1);
  CHECK(unpriced[0].shape == 0);
  CHECK(unpriced[0].reason == metrale::kNoProfileValue);
  // A role the target does not ship: nothing to price.
  metrale::HardwareTarget without = hopper();
  std::erase_if(without.kernels,
                [](const metrale::KernelEntry& e) { return e.name == metrale::ops::kBaGatesMmaKernel; });
  CHECK(metrale::profile_shape_constants(without, ba_gates(), {64, 96, 512, 0}, true).empty());
  // The shape's values by argument name; N only for an op whose shape has one.
  const metrale::ProfileShape shape{7, 96, 512, 3};
  CHECK(metrale::profile_shape_value(shape, true, "m") == 7U);
  CHECK(metrale::profile_shape_value(shape, true, "n") == 96U);
  CHECK(metrale::profile_shape_value(shape, true, "k") == 512U);
  CHECK(metrale::profile_shape_value(shape, true, "vheads_per_group") == 3U);
  CHECK_FALSE(metrale::profile_shape_value(shape, false, "n"));
  CHECK_FALSE(metrale::profile_shape_value(shape, true, "k_stride"));
  // The twin has no shape constant: one row, no shape_constant, at N = 96 too.
  metrale::ProfileRequest request;
  request.op = &metrale::ops::library_ops().get("ssm_ba_gates");
  request.shape = {16, 96, 512, 0};
  request.kernels = {"twin"};
  request.worker_threads = 2;
  request.shape_constants = metrale::profile_shape_constants(hopper(), ba_gates(), request.shape, true);
  const auto rows = metrale::profile_op(hopper(), request);
  REQUIRE(rows.size() == 1);
  CHECK_FALSE(rows[0].shape_constant);
  CHECK(metrale::profile_row_json(rows[0], "hopper")["shape_constant"].is_null());
}

TEST_CASE("profile: a specialised variant the host JIT cannot build is a note, and the generic row stays",
          "[profile][shape][jit]") {
  // N = 80: 5 output tiles, a variant no HARDWARE.toml ships, so no built-in: only the host JIT
  // could build it, and CXX names no compiler (an empty cache folder: nothing built before).
  metrale::test::TempDir cache("metrale-profile-unpriced");
  const metrale::test::ScopedEnv cxx("CXX", "/nonexistent/metrale-test/g++");
  const metrale::ProfileShape shape{32, 80, 256, 0};
  metrale::ProfileRequest request =
      mma_request(shape, metrale::profile_shape_constants(hopper(), ba_gates(), shape, true));
  request.jit_cache_dir = cache.path();
  REQUIRE(request.shape_constants.size() == 1);
  REQUIRE(request.shape_constants[0].shape == 5);
  // Unasked, the failure is the profile's, as any kernel's would be.
  CHECK_THROWS_AS(metrale::profile_op(hopper(), request), metrale::BackendError);
  std::vector<std::string> notes;
  request.unpriced = [&notes](std::string_view line) { notes.emplace_back(line); };
  const auto rows = metrale::profile_op(hopper(), request);
  REQUIRE(rows.size() == 1);
  CHECK_FALSE(rows[0].specialised());
  CHECK(rows[0].traffic.dram_bytes() == ba_compulsory_bytes(32, 80, 256));
  REQUIRE(notes.size() == 1);
  CHECK_THAT(notes[0], Catch::StartsWith("ssm_ba_gates_mma b256l128g6s5 (specialised on n = 80) not priced: ") &&
                           Catch::Contains("/nonexistent/metrale-test/g++"));
}

TEST_CASE("profile: the specialised variant's registers come from its own ptxas report", "[profile][nvrtc]") {
  const auto constants = metrale::profile_shape_constants(hopper(), ba_gates(), {8192, 96, 5120, 0}, true);
  const auto generic = metrale::target_kernel_resources(hopper());
  const auto specialised = metrale::shape_variant_resources(hopper(), constants);
  const auto g = generic.find(metrale::ops::kBaGatesMmaKernel);
  const auto s = specialised.find(metrale::ops::kBaGatesMmaKernel);
  REQUIRE(g != generic.end());
  REQUIRE(s != specialised.end());
  // The lowered names spell the template arguments: <256u, 128u, 6u, 0u> and <256u, 128u, 6u, 6u>.
  CHECK_THAT(g->second.entry, Catch::Contains("Lj256ELj128ELj6ELj0E"));
  CHECK_THAT(s->second.entry, Catch::Contains("Lj256ELj128ELj6ELj6E"));
  CHECK(s->second.registers > 0);
  // One K loop instead of nine (issue 26: 188 -> 148 with nvcc): fewer registers.
  CHECK(s->second.registers < g->second.registers);
  // A refused constant compiles nothing.
  const auto refused = metrale::profile_shape_constants(hopper(), ba_gates(), {8192, 144, 5120, 0}, true);
  CHECK(metrale::shape_variant_resources(hopper(), refused).empty());
}
