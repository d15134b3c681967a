// profile/cost_model.cpp: the roofline prediction of one launch, with its pipeline-latency term.
#include "profile/cost_model.hpp"

#include <array>
#include <utility>

namespace metrale {
namespace {

constexpr double kGiga = 1e9;
constexpr double kTera = 1e12;
constexpr double kMicro = 1e6;

double seconds_to_us(double seconds) { return seconds * kMicro; }

}  // namespace

std::uint64_t waves(std::uint64_t total_blocks, std::uint64_t wave_blocks) {
  const std::uint64_t wave = wave_blocks != 0 ? wave_blocks : 1;
  return (total_blocks + wave - 1) / wave;
}

double latency_us(const LaunchTraffic& traffic, const Roofline& roofline, std::uint64_t wave_blocks) {
  if (traffic.async_bytes <= 0 || traffic.async_in_flight_bytes <= 0) {
    return 0.0;
  }
  const double round_trips = traffic.async_bytes_per_block() / traffic.async_in_flight_bytes;
  return static_cast<double>(waves(traffic.total_blocks, wave_blocks)) * round_trips * roofline.memory_latency_us;
}

Prediction predict(const LaunchTraffic& traffic, const Roofline& roofline, std::uint64_t wave_blocks) {
  Prediction out;
  out.dram_us = seconds_to_us(traffic.dram_bytes() / (roofline.dram_gb_per_s * kGiga));
  out.l2_us = seconds_to_us(traffic.l2_bytes() / (roofline.l2_gb_per_s * kGiga));
  out.fp32_us = seconds_to_us(traffic.flops / (roofline.fp32_tflops * kTera));
  out.tensor_us = seconds_to_us(traffic.tensor_flops / (roofline.bf16_tensor_tflops * kTera));
  out.latency_us = latency_us(traffic, roofline, wave_blocks);
  out.launch_us = roofline.launch_overhead_us;
  const std::array<std::pair<std::string_view, double>, 5> bounds{{{"dram", out.dram_us},
                                                                   {"l2", out.l2_us},
                                                                   {"fp32", out.fp32_us},
                                                                   {"tensor", out.tensor_us},
                                                                   {"latency", out.latency_us}}};
  auto largest = bounds[0];
  for (const auto& bound : bounds) {
    if (bound.second > largest.second) {
      largest = bound;
    }
  }
  out.bound = largest.second >= out.launch_us ? largest.first : std::string_view("launch");
  out.predicted_us = largest.second + out.launch_us;
  return out;
}

double floor_us(double compulsory_bytes, const Roofline& roofline) {
  return seconds_to_us(compulsory_bytes / (roofline.dram_gb_per_s * kGiga));
}

}  // namespace metrale
