// profile/cost_model.cpp: the roofline prediction of one launch.
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

Prediction predict(const LaunchTraffic& traffic, const Roofline& roofline) {
  Prediction out;
  out.dram_us = seconds_to_us(traffic.dram_bytes() / (roofline.dram_gb_per_s * kGiga));
  out.l2_us = seconds_to_us(traffic.l2_bytes() / (roofline.l2_gb_per_s * kGiga));
  out.fp32_us = seconds_to_us(traffic.flops / (roofline.fp32_tflops * kTera));
  out.tensor_us = seconds_to_us(traffic.tensor_flops / (roofline.bf16_tensor_tflops * kTera));
  out.launch_us = roofline.launch_overhead_us;
  const std::array<std::pair<std::string_view, double>, 4> bounds{
      {{"dram", out.dram_us}, {"l2", out.l2_us}, {"fp32", out.fp32_us}, {"tensor", out.tensor_us}}};
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
