// profile/silu_mul_fp8_quant_profile.hpp: the SiLU-and-mul FP8 quant op priced on a target's
// roofline without the CLI: profile_op's rows for it (the parent's two launches, roles "parent"
// and "quant", then the twin), summarised as the parent's total, the twin's and the op's floor.
// Invariants: rows are in launch order, the parent's two before the twin's; parent_us is the sum
// of its two rows' predictions (two launch overheads); the floor is
// ops::silu_mul_fp8_quant_floor_bytes at the DRAM ceiling; inputs are a seeded random pattern.
#pragma once

#include <cstdint>
#include <vector>

#include "metrale/target/hardware_target.hpp"
#include "profile/op_profile.hpp"

namespace metrale {

struct SiluMulProfile {
  std::vector<KernelProfile> rows;
  double parent_us = 0;
  double twin_us = 0;  // 0 when the target ships no twin
  double floor_bytes = 0;
  double floor_us = 0;
  [[nodiscard]] double twin_percent_of_floor() const { return twin_us > 0 ? 100.0 * floor_us / twin_us : 0.0; }
  [[nodiscard]] double twin_speedup() const { return twin_us > 0 ? parent_us / twin_us : 0.0; }
};

// ArgumentError for a shape the op refuses or a target without [roofline].
SiluMulProfile profile_silu_mul_fp8_quant(const HardwareTarget& target, std::uint32_t m, std::uint32_t k,
                                          unsigned worker_threads = 0);

}  // namespace metrale
