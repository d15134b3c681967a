// profile/cost_model.hpp: a launch's predicted GPU time from its traffic and the target's
// [roofline]: each resource's time (bytes or FLOPs over its ceiling), the largest of them plus
// the launch overhead, and the resource that set it. Pure functions.
// The model is a roofline, not a simulator: it assumes each resource can run at its ceiling and
// that the others overlap with it; the device check's rows calibrate it (BENCHMARKS.md).
// One term is not a ceiling but Little's law: a block that streams through asynchronous copies
// keeps a known number of bytes in flight, so it needs (its bytes / bytes in flight) round trips
// of memory_latency_us each, per wave of resident blocks. Kernels without asynchronous copies
// get 0 there: the bytes their plain loads keep in flight are not visible to the host.
#pragma once

#include <cstdint>
#include <string_view>

#include "host/launch_traffic.hpp"
#include "metrale/target/hardware_target.hpp"

namespace metrale {

struct Prediction {
  double dram_us = 0, l2_us = 0, fp32_us = 0, tensor_us = 0, latency_us = 0;
  double launch_us = 0;
  double predicted_us = 0;  // max(dram, l2, fp32, tensor, latency) + launch
  // "dram", "l2", "fp32", "tensor", "latency", or "launch" when the overhead exceeds every
  // resource's time.
  std::string_view bound;
};

// wave_blocks: the blocks the GPU runs at once (sm_count x resident blocks per SM; 0 counts as 1).
Prediction predict(const LaunchTraffic& traffic, const Roofline& roofline, std::uint64_t wave_blocks);

// Waves of a grid: ceil(total_blocks / wave_blocks), wave_blocks 0 counting as 1.
std::uint64_t waves(std::uint64_t total_blocks, std::uint64_t wave_blocks);

// The pipeline-latency term: waves x (async bytes per block / bytes in flight per block) x
// memory_latency_us; 0 when the launch made no asynchronous copies.
double latency_us(const LaunchTraffic& traffic, const Roofline& roofline, std::uint64_t wave_blocks);

// The time the op's compulsory DRAM bytes take at the DRAM ceiling (no launch overhead).
double floor_us(double compulsory_bytes, const Roofline& roofline);

}  // namespace metrale
