// Profile of the library's ops on the host backend: a sampled profile agrees with a full run at
// M = 264 (within 5 %), the FP8 quantiser's DRAM bytes at M = 8192, K = 17408 equal its
// compulsory 432 MB (within 2 %), and the library call's rows carry what the CLI prints.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "hardware/hardware_loader.hpp"
#include "hardware/target_selection.hpp"
#include "host/host_backend.hpp"
#include "metrale/error.hpp"
#include "metrale/ops/op_declaration.hpp"
#include "metrale/ops/ssm_ba_gates.hpp"
#include "ops/op_kernels.hpp"
#include "ops/ssm_ba_gates/ssm_ba_gates.hpp"
#include "profile/op_profile.hpp"
#include "ref/bf16.hpp"
#include "support/hopper_target.hpp"
#include "support/isolated_runtime.hpp"
#include "support/profile_ba_args.hpp"
#include "support/sanitized_build.hpp"

namespace {

// Sanitizer builds (Debug, every access checked) run the same code paths on less work: the BA
// comparison there takes the twin only at M = 64, K = 512 (the full grids at M = 264 take
// minutes under AddressSanitizer on two cores); the default build checks M = 264.
constexpr bool kSanitized = metrale::test::kSanitizedBuild;

const metrale::HardwareTarget& hopper() { return metrale::test::hopper_target(); }

std::vector<metrale::KernelProfile> run(const metrale::ops::OpDeclaration& op, metrale::ProfileShape shape, bool full,
                                        std::uint64_t budget = 0, std::vector<std::string> kernels = {}) {
  metrale::ProfileRequest request;
  request.op = &op;
  request.kernels = std::move(kernels);
  request.shape = shape;
  request.full_grid = full;
  request.budget_blocks = budget;
  request.wave_blocks = 1;
  request.worker_threads = 2;
  return metrale::profile_op(hopper(), request);
}

void check_within(double sampled, double full, double tolerance) {
  INFO("sampled " << sampled << ", full " << full);
  CHECK(std::abs(sampled - full) <= tolerance * full);
}

void check_sampled_agrees(const metrale::ops::OpDeclaration& op, metrale::ProfileShape shape, std::uint64_t budget,
                          const std::vector<std::string>& kernels = {}) {
  const auto full = run(op, shape, true, 0, kernels);
  const auto sampled = run(op, shape, false, budget, kernels);
  const std::size_t op_kernels = op.name == "ssm_ba_gates" ? 3 : 2;
  REQUIRE(full.size() == (kernels.empty() ? op_kernels : kernels.size()));
  REQUIRE(sampled.size() == full.size());
  for (std::size_t i = 0; i < full.size(); ++i) {
    INFO(full[i].kernel);
    const auto& f = full[i].traffic;
    const auto& s = sampled[i].traffic;
    CHECK_FALSE(f.sampled());
    CHECK(s.sampled());
    CHECK(s.total_blocks == f.total_blocks);
    CHECK(s.sampled_blocks * 4 <= s.total_blocks);
    CHECK(f.dram_bytes() > 0);
    check_within(s.dram_read_bytes, f.dram_read_bytes, 0.05);
    check_within(s.dram_write_bytes, f.dram_write_bytes, 0.05);
    check_within(s.l2_bytes(), f.l2_bytes(), 0.05);
    check_within(s.requests(), f.requests(), 0.05);
    check_within(s.sectors_per_request(), f.sectors_per_request(), 0.05);
    check_within(sampled[i].prediction.predicted_us, full[i].prediction.predicted_us, 0.05);
    if (f.flops > 0) {
      check_within(s.flops, f.flops, 0.05);
    }
    if (f.async_bytes > 0) {
      check_within(s.async_bytes, f.async_bytes, 0.05);
      check_within(s.async_in_flight_bytes, f.async_in_flight_bytes, 0.05);
    }
  }
}

}  // namespace

TEST_CASE("profile: at M = 264 a sampled FP8 profile is within 5 % of a full run", "[profile]") {
  check_sampled_agrees(metrale::ops::library_ops().get("fp8_act_quant"), {264, 0, 5120, 0}, 48 * 5);
}

TEST_CASE("profile: at M = 264 a sampled BA-gates profile is within 5 % of a full run (M = 64 under sanitizers)",
          "[profile]") {
  // K = 1024 keeps the full runs to seconds; the grids are the real ones (N = 96, M = 264).
  if (kSanitized) {
    check_sampled_agrees(metrale::ops::library_ops().get("ssm_ba_gates"), {64, 96, 512, 0}, 16, {"twin"});
  } else {
    check_sampled_agrees(metrale::ops::library_ops().get("ssm_ba_gates"), {264, 96, 1024, 0}, 48, {"parent", "twin"});
    // The tensor-core kernel's grid at M = 264 is 3 clusters of 8 (nothing to sample): here 33
    // tiles of 128 tokens, each split over a cluster of 4 (K = 256 is 4 chunks), sampled in
    // whole clusters.
    check_sampled_agrees(metrale::ops::library_ops().get("ssm_ba_gates"), {4224, 96, 256, 0}, 4, {"mma"});
  }
}

TEST_CASE("profile: FP8 at M = 8192, K = 17408 reads and writes its compulsory 432 MB", "[profile]") {
  metrale::ProfileRequest request;
  request.op = &metrale::ops::library_ops().get("fp8_act_quant");
  request.shape = {8192, 0, 17408, 0};
  request.kernels = {"twin"};
  request.worker_threads = 2;
  const auto rows = metrale::profile_op(hopper(), request);
  REQUIRE(rows.size() == 1);
  const auto& row = rows[0];
  CHECK(row.traffic.sampled());
  CHECK(row.compulsory_bytes == Approx(432.28e6).epsilon(1e-4));
  CHECK(std::abs(row.traffic.dram_bytes() - row.compulsory_bytes) <= 0.02 * row.compulsory_bytes);
  CHECK(row.prediction.bound == "dram");
  CHECK(row.ratio_to_floor() < 1.1);
}

TEST_CASE("profile: the BA twin reads the whole weight from L2 once per token", "[profile]") {
  const auto rows = run(metrale::ops::library_ops().get("ssm_ba_gates"), {16, 96, 1024, 0}, true);
  REQUIRE(rows.size() == 4);
  CHECK(rows[0].role == "parent");
  CHECK(rows[1].role == "twin");
  CHECK(rows[2].role == "mma");
  CHECK(rows[3].role == "decode");
  // Twin: one block per token; each reads the weight (96 x 1024 bf16), its x row and the 48
  // a_log and dt_bias floats once.
  CHECK(rows[1].traffic.l2_read_bytes == 16.0 * (96 * 1024 * 2 + 1024 * 2 + 2 * 48 * 4));
  // DRAM: x, the weight, a_log and dt_bias read once; the gate rows written once.
  CHECK(rows[1].traffic.dram_read_bytes == 16.0 * 1024 * 2 + 96 * 1024 * 2 + 2 * 48 * 4);
  CHECK(rows[1].traffic.dram_write_bytes == 16.0 * 96 * 4);
  // Every output is K FMAs in both kernels.
  CHECK(rows[0].traffic.fma == 16.0 * 96 * 1024);
  CHECK(rows[1].traffic.fma == 16.0 * 96 * 1024);
  CHECK(rows[1].traffic.special_functions > 0);
  // Tensor cores: one tile of 128 tokens, its K split over a cluster of 8 CTAs; together they
  // stream the 16 real x rows (rows past M are zero-filled, not read) and the weight once, and
  // sum their partial tiles through each other's shared memory, which is not device-memory
  // traffic; DRAM as the twin. Its MMAs: 8 token tiles x 6 output tiles x 64 k-steps of 16, at
  // 2 x 16^3 FLOPs each (the idle token tiles are computed too).
  CHECK(rows[2].traffic.l2_read_bytes == 96 * 1024 * 2 + 16.0 * 1024 * 2 + 2 * 48 * 4);
  CHECK(rows[2].traffic.dram_read_bytes == rows[1].traffic.dram_read_bytes);
  CHECK(rows[2].traffic.dram_write_bytes == 16.0 * 96 * 4);
  CHECK(rows[2].traffic.tensor_flops == 8.0 * 6 * 64 * 2 * 16 * 16 * 16);
  CHECK(rows[1].traffic.tensor_flops == 0);
  // Its asynchronous copies are those reads of x and the weight (zero-fills count nothing), and
  // they price its pipeline latency; the twin streams through plain loads: no latency term.
  CHECK(rows[2].traffic.async_bytes == 96 * 1024 * 2 + 16.0 * 1024 * 2);
  // Decode: 16 columns of 6 outputs, each a cluster of 4 CTAs (K 1024 is 128 vectors, 32 a CTA),
  // so the weight crosses L2 once and x once per column; a_log and dt_bias as the stores need them
  // (at most a sector of each per output a CTA stores). DRAM as the twin; K FMAs per output.
  const double decode_streams = 96 * 1024 * 2 + 16.0 * 16 * 1024 * 2;
  CHECK(rows[3].traffic.l2_read_bytes >= decode_streams + 2 * 48 * 4);
  CHECK(rows[3].traffic.l2_read_bytes <= decode_streams + 16.0 * 96 * 2 * 32);
  CHECK(rows[3].traffic.dram_read_bytes == rows[1].traffic.dram_read_bytes);
  CHECK(rows[3].traffic.dram_write_bytes == 16.0 * 96 * 4);
  CHECK(rows[3].traffic.fma == 16.0 * 96 * 1024);
  CHECK(rows[3].traffic.async_bytes == 0);
  CHECK(rows[2].traffic.async_in_flight_bytes > 0);
  CHECK(rows[2].prediction.latency_us > 0);
  CHECK(rows[1].traffic.async_bytes == 0);
  CHECK(rows[1].prediction.latency_us == 0);
}

TEST_CASE("profile: bad requests are refused by name", "[profile]") {
  metrale::ProfileRequest request;
  request.op = &metrale::ops::library_ops().get("fp8_act_quant");
  request.shape = {16, 0, 5120, 0};
  request.kernels = {"parent"};
  CHECK_THROWS_AS(metrale::profile_op(hopper(), request), metrale::ArgumentError);
  request.kernels = {};
  request.shape.k = 100;  // not a multiple of 128
  CHECK_THROWS_AS(metrale::profile_op(hopper(), request), metrale::ArgumentError);
  auto no_roofline = hopper();
  no_roofline.roofline.reset();
  request.shape.k = 5120;
  CHECK_THROWS_WITH(metrale::profile_op(no_roofline, request), Catch::Contains("[roofline]"));
}

TEST_CASE("profile: the profiled instantiations compute the plain ones' bytes", "[profile]") {
  const std::uint32_t m = 5, n = 96, k = 1024, nv = 48;
  const auto x = metrale::ref::random_bf16(std::size_t{m} * k, 21);
  const auto w = metrale::ref::random_bf16(std::size_t{n} * k, 22);
  const auto a_log = metrale::ref::random_floats(nv, 23, -1.0F, 1.0F);
  const auto dt_bias = metrale::ref::random_floats(nv, 24, -1.0F, 1.0F);
  auto run_on = [&](bool profiled, bool twin) {
    metrale::HostBackendOptions options;
    options.profiled_kernels = profiled;
    options.worker_threads = 2;
    metrale::HostBackend gpu(options);
    const metrale::ops::BaGatesArgs args =
        metrale::test::upload_ba_args(gpu, {m, n, k, &x, &w, &a_log, &dt_bias, -12345.0F});
    const metrale::KernelParams params{256, 64, twin ? 8U : 0U};
    metrale::LoadRequest load;
    load.kernel = twin ? metrale::ops::kBaGatesTwinKernel : metrale::ops::kBaGatesParentKernel;
    load.params = params;
    const auto handle = gpu.load(load);
    if (twin) {
      metrale::ops::launch_ba_gates_twin(gpu, handle, params, args);
    } else {
      metrale::ops::launch_ba_gates_parent(gpu, handle, params, args);
    }
    std::vector<float> out(std::size_t{m} * n);
    gpu.copy_to_host(out.data(), args.gate_out, out.size() * sizeof(float));
    return out;
  };
  for (const bool twin : {false, true}) {
    INFO((twin ? "twin" : "parent"));
    const auto plain = run_on(false, twin);
    const auto profiled = run_on(true, twin);
    CHECK(std::none_of(plain.begin(), plain.end(), [](float v) { return v == -12345.0F; }));
    CHECK(std::memcmp(plain.data(), profiled.data(), plain.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("profile: an op whose declaration has no profile hook is refused by name", "[profile]") {
  metrale::ops::OpDeclaration op = metrale::ops::library_ops().get("fp8_act_quant");
  op.profile = nullptr;
  metrale::ProfileRequest request;
  request.op = &op;
  request.shape = {16, 0, 1024, 0};
  request.worker_threads = 2;
  CHECK_THROWS_WITH(metrale::profile_op(hopper(), request),
                    Catch::Contains("cannot price op fp8_act_quant (its declaration has no profile hook)"));
  CHECK_THROWS_WITH(metrale::compulsory_bytes(op, request.shape), Catch::Contains("no profile hook"));
  request.op = nullptr;
  CHECK_THROWS_WITH(metrale::profile_op(hopper(), request), Catch::Contains("no op given"));
}
