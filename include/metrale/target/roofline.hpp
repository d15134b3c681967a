// metrale/target/roofline.hpp: a target's [roofline] table, the ceilings the profile's cost model
// divides by (metrale/profile/cost_model.hpp). Each HARDWARE.toml says where its numbers come from.
// Invariant (established by the loader): every value is finite and inside its key's range.
#pragma once

namespace metrale {

struct Roofline {
  double dram_gb_per_s = 0;       // device memory, GB/s (10^9 bytes), read + write
  double l2_gb_per_s = 0;         // L2 <-> SM, GB/s
  double fp32_tflops = 0;         // FP32 FMA throughput, TFLOP/s (an FMA is 2 FLOPs)
  double bf16_tensor_tflops = 0;  // dense bf16 tensor-core throughput, TFLOP/s
  double launch_overhead_us = 0;  // added to every kernel's predicted time
};

}  // namespace metrale
