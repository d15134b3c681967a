// profile/profile_json.cpp: a profile row's JSON.
#include "profile/profile_json.hpp"

#include <fmt/format.h>

#include <string>

#include "metrale/gpu/launch_config.hpp"

namespace metrale {

nlohmann::json shape_constant_json(const ProfiledShapeConstant& constant) {
  return {{"role", constant.role},
          {"arg", constant.arg},
          {"value", constant.value},
          {"shape", constant.shape != 0 ? nlohmann::json(constant.shape) : nlohmann::json(nullptr)},
          {"reason", constant.shape != 0 ? nlohmann::json(nullptr) : nlohmann::json(constant.reason)}};
}

nlohmann::json profile_row_json(const KernelProfile& row, std::string_view target) {
  const LaunchTraffic& t = row.traffic;
  return {{"op", row.op},
          {"target", std::string(target)},
          {"kernel", row.kernel},
          {"role", row.role},
          {"params", row.params.tag()},
          {"variant", row.specialised() ? "specialised" : "generic"},
          {"shape", row.specialised() ? nlohmann::json(row.params.shape) : nlohmann::json(nullptr)},
          {"shape_constant", row.shape_constant ? shape_constant_json(*row.shape_constant) : nlohmann::json(nullptr)},
          {"m", row.shape.m},
          {"n", row.has_n ? nlohmann::json(row.shape.n) : nlohmann::json(nullptr)},
          {"k", row.shape.k},
          {"grid", to_string(t.grid)},
          {"cluster", t.cluster_blocks},
          {"block", to_string(t.block)},
          {"registers", row.registers ? nlohmann::json(*row.registers) : nlohmann::json(nullptr)},
          {"occupancy", row.occupancy ? nlohmann::json(*row.occupancy) : nlohmann::json(nullptr)},
          {"dram_bytes", t.dram_bytes()},
          {"dram_read_bytes", t.dram_read_bytes},
          {"dram_write_bytes", t.dram_write_bytes},
          {"l2_bytes", t.l2_bytes()},
          {"requests", t.requests()},
          {"sectors_per_request", t.sectors_per_request()},
          {"flops", t.flops + t.tensor_flops},
          {"fp32_flops", t.flops},
          {"tensor_flops", t.tensor_flops},
          {"special_functions", t.special_functions},
          {"shuffles", t.shuffles},
          {"dram_us", row.prediction.dram_us},
          {"l2_us", row.prediction.l2_us},
          {"fp32_us", row.prediction.fp32_us},
          {"tensor_us", row.prediction.tensor_us},
          {"latency_us", row.prediction.latency_us},
          {"async_bytes", t.async_bytes},
          {"async_in_flight_bytes", t.async_in_flight_bytes},
          {"launch_us", row.prediction.launch_us},
          {"predicted_us", row.prediction.predicted_us},
          {"floor_us", row.floor_us},
          {"compulsory_bytes", row.compulsory_bytes},
          {"bound", std::string(row.prediction.bound)},
          {"predicted_over_floor", row.ratio_to_floor()},
          {"sampled_blocks", t.sampled_blocks},
          {"total_blocks", t.total_blocks},
          // The keys of metrale-ops-bench's kernel rows (tools/bench/ops_bench_report.cpp), equal
          // field for field, so a device run's measured row joins this prediction.
          {"bench_key",
           {{"op", row.op_name},
            {"kernel", row.specialised() ? fmt::format("{}_s{}", row.role, row.params.shape) : row.role},
            {"m", row.shape.m},
            {"k", row.shape.k},
            {"n", row.has_n ? row.shape.n : 0U}}}};
}

}  // namespace metrale
