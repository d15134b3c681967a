// profile_fused_add_rmsnorm_test.cpp: the fused residual-add + RMSNorm op priced on hopper's
// roofline at Qwen3.5-27B's hidden 5120 (M = 256, in place, with the FP8 output): one row per
// kernel, parent then twin; both move the op's floor in DRAM bytes (within 2 %: each byte of x,
// residual, weight read once, of y, residual_out, q and scales written once) and the twin issues
// at most a quarter of the parent's load requests (16-byte loads, not 2-byte ones). The rows are
// printed (BENCHMARKS.md's predicted rows take them).
#include <catch2/catch.hpp>
#include <iomanip>
#include <iostream>

#include "hardware/hardware_loader.hpp"
#include "hardware/target_selection.hpp"
#include "metrale/ops/op_declaration.hpp"
#include "ops/fused_add_rmsnorm/fused_add_rmsnorm.hpp"
#include "ops/op_kernels.hpp"
#include "profile/op_profile.hpp"

TEST_CASE("the fused add-RMSNorm kernels are priced at the op's DRAM floor, the twin with fewer loads",
          "[profile][rmsnorm]") {
  const auto targets = metrale::load_targets(metrale::ops::library_catalog());
  const metrale::HardwareTarget* hopper = metrale::find_target(targets, "hopper");
  REQUIRE(hopper != nullptr);
  metrale::ProfileRequest request;
  request.op = &metrale::ops::library_ops().get("fused_add_rmsnorm");
  request.shape.m = 256;
  request.shape.k = 5120;
  request.worker_threads = 2;
  const auto rows = metrale::profile_op(*hopper, request);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].role == "parent");
  CHECK(rows[1].role == "twin");
  const double floor = metrale::ops::fused_add_rmsnorm_floor_bytes(256, 5120, true);
  for (const auto& row : rows) {
    std::cout << std::fixed << std::setprecision(2) << "fused_add_rmsnorm " << row.role << " " << row.kernel
              << " M=256 hidden=5120: dram " << row.traffic.dram_bytes() / 1e6 << " MB, loads "
              << row.traffic.load_requests << ", " << row.prediction.predicted_us << " us (" << row.prediction.bound
              << "), floor " << row.floor_us << " us\n";
    CHECK(row.compulsory_bytes == floor);
    CHECK(std::abs(row.traffic.dram_bytes() - floor) <= 0.02 * floor);
  }
  std::cout << std::flush;
  CHECK(rows[1].traffic.load_requests * 4 <= rows[0].traffic.load_requests);
  CHECK(rows[1].prediction.predicted_us <= rows[0].prediction.predicted_us);
}
