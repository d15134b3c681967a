// ssm_ba_gates_ref.cpp: the BA-gates references (kernel-order float, and the float64 oracle).
#include "ops/ssm_ba_gates/ssm_ba_gates_ref.hpp"

#include <fmt/format.h>

#include <array>
#include <cmath>

#include "metrale/error.hpp"
#include "ref/bf16.hpp"

namespace metrale::ref {
namespace {

constexpr std::uint32_t kLanes = 64;
constexpr std::uint32_t kWarpSize = 32;

// Where output n lands, written from the spec (DESIGN.md "Kernel A") independently of the ops'
// mapping, so a wrong ops::ba_gates_slot shows as a mismatch: within each group of
// 2 * vheads_per_group outputs the first half is beta (column nv + vh), the second gate (vh).
struct RefSlot {
  bool beta = false;
  std::uint32_t vh = 0;
};
RefSlot ref_slot(std::uint32_t n, std::uint32_t vheads_per_group) {
  const std::uint32_t group = n / (2 * vheads_per_group);
  const std::uint32_t within = n % (2 * vheads_per_group);
  const bool beta = within < vheads_per_group;
  return {beta, group * vheads_per_group + (beta ? within : within - vheads_per_group)};
}

void check_inputs(const BaGatesRefInputs& in, const BaGatesRefShape& s) {
  const bool ok = s.k % 8 == 0 && s.k_stride >= s.k && s.n == 2 * s.nv && s.vheads_per_group != 0 &&
                  s.nv % s.vheads_per_group == 0 && in.x.size() >= std::size_t{s.m} * s.k_stride &&
                  in.weight.size() >= std::size_t{s.n} * s.k && in.a_log.size() >= s.nv && in.dt_bias.size() >= s.nv;
  if (!ok) {
    throw ArgumentError(
        fmt::format("ssm_ba_gates reference: inputs do not fit the shape M={} N={} K={} K_stride={} "
                    "nv={} vheads_per_group={}",
                    s.m, s.n, s.k, s.k_stride, s.nv, s.vheads_per_group));
  }
}

// The 16/8/4/2/1 xor butterfly over one warp's partials; every lane ends with the same sum,
// lane 0's is returned.
float warp_butterfly(std::array<float, kWarpSize> lanes) {
  for (std::uint32_t offset = 16; offset >= 1; offset /= 2) {
    std::array<float, kWarpSize> next{};
    for (std::uint32_t i = 0; i < kWarpSize; ++i) {
      next[i] = lanes[i] + lanes[i ^ offset];
    }
    lanes = next;
  }
  return lanes[0];
}

float kernel_order_acc(const BaGatesRefInputs& in, const BaGatesRefShape& s, std::uint32_t token, std::uint32_t n) {
  const std::uint16_t* x_row = in.x.data() + std::size_t{token} * s.k_stride;
  const std::uint16_t* w_row = in.weight.data() + std::size_t{n} * s.k;
  std::array<float, kLanes> lane_acc{};
  for (std::uint32_t lane = 0; lane < kLanes; ++lane) {
    float acc = 0.0f;
    // Lane l sums the 16-byte vectors kv = l, l + 64, ... in order (DESIGN.md "Kernel A").
    for (std::uint32_t kv = lane; kv < s.k / 8; kv += kLanes) {
      for (std::uint32_t e = 0; e < 8; ++e) {
        const std::size_t i = std::size_t{kv} * 8 + e;
        acc = std::fmaf(bf16_to_float(x_row[i]), bf16_to_float(w_row[i]), acc);
      }
    }
    lane_acc[lane] = acc;
  }
  std::array<float, kWarpSize> even{};
  std::array<float, kWarpSize> odd{};
  for (std::uint32_t i = 0; i < kWarpSize; ++i) {
    even[i] = lane_acc[i];
    odd[i] = lane_acc[kWarpSize + i];
  }
  const float warp_even = warp_butterfly(even);
  const float warp_odd = warp_butterfly(odd);
  return warp_even + warp_odd;
}

double softplus64(double x) { return x > 20.0 ? x : std::log1p(std::exp(x)); }

}  // namespace

float ba_gates_sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

float ba_gates_decay(float acc, float a_log, float dt_bias) {
  const float x = acc + dt_bias;
  const float softplus = x > 20.0f ? x : std::log1p(std::exp(x));
  return -std::exp(a_log) * softplus;
}

std::vector<float> ssm_ba_gates_reference_acc(const BaGatesRefInputs& in, const BaGatesRefShape& shape) {
  check_inputs(in, shape);
  std::vector<float> acc(std::size_t{shape.m} * shape.n);
  for (std::uint32_t t = 0; t < shape.m; ++t) {
    for (std::uint32_t n = 0; n < shape.n; ++n) {
      acc[std::size_t{t} * shape.n + n] = kernel_order_acc(in, shape, t, n);
    }
  }
  return acc;
}

void ssm_ba_gates_reference(const BaGatesRefInputs& in, const BaGatesRefShape& shape, std::span<float> gate_out) {
  if (shape.m != 0 && gate_out.size() < std::size_t{shape.m - 1} * shape.gate_stride + std::size_t{2} * shape.nv) {
    throw ArgumentError("ssm_ba_gates reference: gate_out is smaller than M rows of gate_stride");
  }
  const std::vector<float> acc = ssm_ba_gates_reference_acc(in, shape);
  for (std::uint32_t t = 0; t < shape.m; ++t) {
    float* row = gate_out.data() + std::size_t{t} * shape.gate_stride;
    for (std::uint32_t n = 0; n < shape.n; ++n) {
      const float a = acc[std::size_t{t} * shape.n + n];
      const RefSlot slot = ref_slot(n, shape.vheads_per_group);
      row[slot.beta ? shape.nv + slot.vh : slot.vh] =
          slot.beta ? ba_gates_sigmoid(a) : ba_gates_decay(a, in.a_log[slot.vh], in.dt_bias[slot.vh]);
    }
  }
}

std::vector<double> ssm_ba_gates_oracle(const BaGatesRefInputs& in, const BaGatesRefShape& shape) {
  check_inputs(in, shape);
  const std::size_t width = 2 * std::size_t{shape.nv};
  std::vector<double> out(std::size_t{shape.m} * width);
  for (std::uint32_t t = 0; t < shape.m; ++t) {
    for (std::uint32_t n = 0; n < shape.n; ++n) {
      double acc = 0.0;
      for (std::uint32_t i = 0; i < shape.k; ++i) {
        acc += static_cast<double>(bf16_to_float(in.x[std::size_t{t} * shape.k_stride + i])) *
               static_cast<double>(bf16_to_float(in.weight[std::size_t{n} * shape.k + i]));
      }
      const RefSlot where = ref_slot(n, shape.vheads_per_group);
      const std::uint32_t vh = where.vh;
      double& slot = out[std::size_t{t} * width + (where.beta ? shape.nv + vh : vh)];
      slot = where.beta
                 ? 1.0 / (1.0 + std::exp(-acc))
                 : -std::exp(static_cast<double>(in.a_log[vh])) * softplus64(acc + static_cast<double>(in.dt_bias[vh]));
    }
  }
  return out;
}

}  // namespace metrale::ref
