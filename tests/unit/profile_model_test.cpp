// Profile: the pure parts. The [roofline] table (validated like every key, present in every
// shipped target), the cost model's bound and prediction, occupancy, and the grid sample's
// extrapolation, which must be exact for footprints shared, per coordinate or per block.
#include <catch2/catch.hpp>
#include <cstdint>
#include <set>
#include <string>

#include "hardware/hardware_loader.hpp"
#include "hardware/target_selection.hpp"
#include "host/builtin_kernels.hpp"
#include "host/grid_sample.hpp"
#include "host/host_kernel_table.hpp"
#include "metrale/error.hpp"
#include "ops/op_kernels.hpp"
#include "profile/cost_model.hpp"
#include "profile/occupancy.hpp"
#include "profile/target_resources.hpp"

namespace {

const std::string kBase =
    "[target]\nname = \"hopper\"\ncompute_capability = \"9.0\"\narch = \"sm_90\"\nsm_count = 132\n"  // 1-5
    "[kernels]\nssm_ba_gates = { block = 256, lanes = 64 }\n"                                        // 6-7
    "[defaults]\nssm_ba_gates_hopper = true\nfp8_act_quant_hopper = true\n"                          // 8-10
    "ssm_ba_gates_tensor_core = false\n";                                                            // 11
const std::string kRoofline =
    "[roofline]\n"                // 12
    "dram_gb_per_s = 4300\n"      // 13
    "l2_gb_per_s = 7000.5\n"      // 14
    "fp32_tflops = 67\n"          // 15
    "bf16_tensor_tflops = 788\n"  // 16
    "launch_overhead_us = 3\n"    // 17
    "memory_latency_us = 0.8\n";  // 18

std::string roofline_with(const std::string& from, const std::string& to) {
  std::string text = kBase + kRoofline;
  text.replace(text.find(from), from.size(), to);
  return text;
}

}  // namespace

TEST_CASE("roofline: the table parses and every shipped target has one", "[profile][target]") {
  const auto target =
      metrale::parse_hardware_toml(kBase + kRoofline, "t/hopper/HARDWARE.toml", metrale::ops::library_catalog());
  REQUIRE(target.roofline);
  CHECK(target.roofline->dram_gb_per_s == 4300);
  CHECK(target.roofline->l2_gb_per_s == 7000.5);
  CHECK(target.roofline->launch_overhead_us == 3);
  CHECK(target.roofline->memory_latency_us == 0.8);
  CHECK_FALSE(metrale::parse_hardware_toml(kBase, "t/hopper/HARDWARE.toml", metrale::ops::library_catalog()).roofline);
  for (const auto& shipped : metrale::load_targets(metrale::ops::library_catalog())) {
    INFO(shipped.name);
    REQUIRE(shipped.roofline);
    CHECK(shipped.roofline->dram_gb_per_s > 0);
    CHECK(shipped.roofline->memory_latency_us > 0);
  }
}

TEST_CASE("roofline: bad values are refused with file, line and key", "[profile][target]") {
  struct Case {
    std::string text;
    std::string starts;
    std::string hint;
  };
  const std::string file = "t/hopper/HARDWARE.toml";
  const Case cases[] = {
      {roofline_with("dram_gb_per_s = 4300", "dram_gb_per_s = \"fast\""),
       file + ":13: roofline.dram_gb_per_s: ", "expected number"},
      {roofline_with("fp32_tflops = 67", "fp32_tflops = -1"), file + ":15: roofline.fp32_tflops: ", "outside"},
      {roofline_with("launch_overhead_us = 3\n", ""), file + ":12: roofline.launch_overhead_us: ", "missing key"},
      {roofline_with("l2_gb_per_s = 7000.5", "l2_gb_per_s = nan"), file + ":14: roofline.l2_gb_per_s: ", "outside"},
      {roofline_with("memory_latency_us = 0.8\n", ""), file + ":12: roofline.memory_latency_us: ", "missing key"},
      {roofline_with("memory_latency_us = 0.8", "memory_latency_us = -0.5"),
       file + ":18: roofline.memory_latency_us: ", "outside"},
      {roofline_with("memory_latency_us = 0.8", "memory_latency_us = \"1 us\""),
       file + ":18: roofline.memory_latency_us: ", "expected number"},
      {roofline_with("l2_gb_per_s", "l2_bandwidth = 1\nl2_gb_per_s"),
       file + ":14: roofline.l2_bandwidth: ", "unknown key"},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    CHECK_THROWS_WITH(metrale::parse_hardware_toml(c.text, file, metrale::ops::library_catalog()),
                      Catch::StartsWith(c.starts) && Catch::Contains(c.hint));
  }
}

TEST_CASE("cost model: the largest bound plus the launch overhead, and which bound", "[profile]") {
  const metrale::Roofline roofline{4000, 8000, 50, 500, 2, 0.5};
  metrale::LaunchTraffic t;
  t.dram_read_bytes = 3e6;  // 0.75 us + write 0.25 us = 1 us of DRAM
  t.dram_write_bytes = 1e6;
  t.l2_read_bytes = 16e6;  // 2 us of L2
  t.flops = 50e6;          // 1 us of FP32
  auto p = metrale::predict(t, roofline, 132);
  CHECK(p.dram_us == Approx(1.0));
  CHECK(p.l2_us == Approx(2.0));
  CHECK(p.fp32_us == Approx(1.0));
  CHECK(p.bound == "l2");
  CHECK(p.predicted_us == Approx(4.0));
  t.flops = 500e6;  // 10 us
  p = metrale::predict(t, roofline, 132);
  CHECK(p.bound == "fp32");
  CHECK(p.predicted_us == Approx(12.0));
  p = metrale::predict(metrale::LaunchTraffic{}, roofline, 132);
  CHECK(p.bound == "launch");
  CHECK(p.predicted_us == Approx(2.0));
  CHECK(metrale::floor_us(8e6, roofline) == Approx(2.0));
  CHECK(p.latency_us == 0);
}

TEST_CASE("cost model: the pipeline-latency term is waves x round trips x the latency", "[profile]") {
  const metrale::Roofline roofline{4000, 8000, 50, 500, 2, 0.5};
  CHECK(metrale::waves(300, 132) == 3);
  CHECK(metrale::waves(264, 132) == 2);
  CHECK(metrale::waves(5, 0) == 5);
  metrale::LaunchTraffic t;
  t.total_blocks = 300;
  t.sampled_blocks = 300;
  t.l2_read_bytes = 16e6;               // 2 us of L2
  t.async_bytes = 300.0 * 80 * 1024;    // 80 KiB per block
  t.async_in_flight_bytes = 20 * 1024;  // 20 KiB in flight: 4 round trips per block
  // 3 waves of 132 x 4 round trips x 0.5 us = 6 us.
  auto p = metrale::predict(t, roofline, 132);
  CHECK(p.latency_us == Approx(6.0));
  CHECK(p.l2_us == Approx(2.0));
  CHECK(p.bound == "latency");
  CHECK(p.predicted_us == Approx(8.0));
  // Twice the blocks resident at once: 2 waves, 4 us.
  CHECK(metrale::latency_us(t, roofline, 264) == Approx(4.0));
  // Twice the bytes in flight halves the round trips: 3 us, still above L2's 2 us.
  t.async_in_flight_bytes = 40 * 1024;
  p = metrale::predict(t, roofline, 132);
  CHECK(p.latency_us == Approx(3.0));
  CHECK(p.bound == "latency");
  // Without asynchronous copies the term is 0 and the roofline decides.
  t.async_bytes = 0;
  t.async_in_flight_bytes = 0;
  p = metrale::predict(t, roofline, 132);
  CHECK(p.latency_us == 0);
  CHECK(p.bound == "l2");
  CHECK(p.predicted_us == Approx(4.0));
}

TEST_CASE("occupancy: registers, threads and blocks per SM as CUDA counts them", "[profile]") {
  const auto hopper = metrale::sm_limits(metrale::ComputeCapability{9, 0});
  // 256 threads at 72 registers: 2304 per warp, 18432 per block, 3 blocks of 8 warps = 24 / 64.
  auto occ = metrale::occupancy(hopper, 256, 72, 0);
  CHECK(occ.blocks_per_sm == 3);
  CHECK(occ.fraction == Approx(0.375));
  CHECK(metrale::occupancy(hopper, 256, std::nullopt, 0).blocks_per_sm == 8);
  CHECK(metrale::occupancy(hopper, 16, 32, 0).blocks_per_sm == 32);           // the block limit
  CHECK(metrale::occupancy(hopper, 128, 32, 100 * 1024).blocks_per_sm == 2);  // shared memory
  CHECK(metrale::sm_limits(metrale::ComputeCapability{12, 1}).max_threads == 1536);
}

TEST_CASE("grid sample: a sub-grid of whole rows, spread over the grid, in whole waves", "[profile]") {
  const auto full = metrale::host::plan_grid_sample({100, 5, 1}, 1000, 10);
  CHECK(full.sampled_blocks == 500);
  CHECK(full.blocks().size() == 500);
  const auto sample = metrale::host::plan_grid_sample({8192, 24, 1}, 2000, 264);
  CHECK(sample.dims[0].sampled);
  CHECK_FALSE(sample.dims[1].sampled);
  CHECK(sample.dims[0].coords.size() % 2 == 0);
  CHECK(sample.sampled_blocks == sample.blocks().size());
  CHECK(sample.sampled_blocks >= 2112);  // rounded up to whole waves (8 x 264)
  CHECK(sample.sampled_blocks < 2112 + 2 * 24);
  CHECK(sample.dims[0].coords.front() < 8192 / 100);  // spread end to end
  CHECK(sample.dims[0].coords.back() > 8192 - 8192 / 100);
  const std::set<std::uint32_t> distinct(sample.dims[0].coords.begin(), sample.dims[0].coords.end());
  CHECK(distinct.size() == sample.dims[0].coords.size());
}

TEST_CASE("grid sample: a cluster launch is sampled in whole clusters, its blocks together", "[profile][cluster]") {
  constexpr std::uint32_t kCluster = 4;
  const metrale::Dim3 grid{512 * kCluster, 6, 1};
  const auto sample = metrale::host::plan_grid_sample(grid, 400, 132, kCluster);
  REQUIRE(sample.dims[0].sampled);
  CHECK(sample.dims[0].extent == 512);  // clusters along x
  CHECK(sample.total_blocks == grid.volume());
  const std::vector<std::uint64_t> blocks = sample.blocks();
  REQUIRE(blocks.size() == sample.sampled_blocks);
  REQUIRE(blocks.size() % kCluster == 0);
  CHECK(sample.block_scale() == Approx(static_cast<double>(grid.volume()) / static_cast<double>(blocks.size())));
  std::size_t broken = 0;
  for (std::size_t i = 0; i < blocks.size(); i += kCluster) {
    const metrale::Dim3 first{static_cast<std::uint32_t>(blocks[i] % grid.x),
                              static_cast<std::uint32_t>(blocks[i] / grid.x), 0};
    broken += first.x % kCluster == 0 ? 0 : 1;
    for (std::uint32_t rank = 1; rank < kCluster; ++rank) {
      const metrale::Dim3 block{first.x + rank, first.y, 0};
      broken += blocks[i + rank] == blocks[i] + rank ? 0 : 1;
      broken += sample.combo_mask(block) == sample.combo_mask(first) ? 0 : 1;  // one cluster, one membership
    }
  }
  CHECK(broken == 0);
  // A grid that fits the budget runs whole.
  CHECK(metrale::host::plan_grid_sample({16, 2, 1}, 1000, 132, 8).blocks().size() == 32);
}

TEST_CASE("grid sample: distinct counts extrapolate exactly for shared, per-row and per-block parts", "[profile]") {
  // A footprint of 7 shared sectors, 3 per x coordinate, 2 per y coordinate and 5 per block.
  const metrale::Dim3 grid{1000, 300, 1};
  const auto sample = metrale::host::plan_grid_sample(grid, 500, 1);
  REQUIRE(sample.dims[0].sampled);
  REQUIRE(sample.dims[1].sampled);
  std::array<std::uint64_t, 8> per_combo{};
  for (unsigned combo = 0; combo < 4; ++combo) {
    auto count = [&](std::size_t d) {
      std::uint64_t n = 0;
      for (std::size_t i = 0; i < sample.dims[d].coords.size(); ++i) {
        n += ((combo >> d & 1U) == 0 || sample.dims[d].in_half[i]) ? 1 : 0;
      }
      return n;
    };
    per_combo[combo] = 7 + 3 * count(0) + 2 * count(1) + 5 * count(0) * count(1);
  }
  CHECK(sample.extrapolate_distinct(per_combo) == Approx(7 + 3 * 1000 + 2 * 300 + 5 * 1000 * 300));
  // Membership of a block in the combinations follows its coordinates' halves.
  const metrale::Dim3 first{sample.dims[0].coords[0], sample.dims[1].coords[1], 0};
  CHECK(sample.combo_mask(first) == 0b0011);  // all, x at half; y coordinate 1 is not in y's half
}

TEST_CASE("profiled and plain host kernels match", "[profile][host]") {
  metrale::HostKernelTable plain;
  metrale::HostKernelTable profiled;
  metrale::register_builtin_host_kernels(plain);
  metrale::register_profiled_builtin_host_kernels(profiled);
  CHECK(plain.list() == profiled.list());
  CHECK(plain.size() == profiled.size());
}

TEST_CASE("profile: registers come from ptxas for every kernel hopper ships", "[profile][nvrtc]") {
  const auto targets = metrale::load_targets(metrale::ops::library_catalog());
  const auto* hopper = metrale::find_target(targets, "hopper");
  REQUIRE(hopper != nullptr);
  const auto resources = metrale::target_kernel_resources(*hopper);
  REQUIRE(resources.size() == hopper->kernels.size());
  for (const auto& [kernel, found] : resources) {
    INFO(kernel);
    CHECK(found.registers > 0);
    CHECK(found.registers <= 255);
  }
}
