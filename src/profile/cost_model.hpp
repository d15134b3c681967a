// profile/cost_model.hpp: a launch's predicted GPU time from its traffic and the target's
// [roofline]: each resource's time (bytes or FLOPs over its ceiling), the largest of them plus
// the launch overhead, and the resource that set it. Pure functions.
// The model is a roofline, not a simulator: it assumes each resource can run at its ceiling and
// that the others overlap with it; the device check's rows calibrate it (BENCHMARKS.md).
#pragma once

#include <string_view>

#include "host/launch_traffic.hpp"
#include "metrale/target/hardware_target.hpp"

namespace metrale {

struct Prediction {
  double dram_us = 0, l2_us = 0, fp32_us = 0, tensor_us = 0;
  double launch_us = 0;
  double predicted_us = 0;  // max(dram, l2, fp32, tensor) + launch
  // "dram", "l2", "fp32", "tensor", or "launch" when the overhead exceeds every resource's time.
  std::string_view bound;
};

Prediction predict(const LaunchTraffic& traffic, const Roofline& roofline);

// The time the op's compulsory DRAM bytes take at the DRAM ceiling (no launch overhead).
double floor_us(double compulsory_bytes, const Roofline& roofline);

}  // namespace metrale
