// ref/ssm_ba_gates_ref.hpp: CPU references of the SSM BA-gates op.
// Invariants: ssm_ba_gates_reference keeps the kernels' operation order exactly (lane-strided
// kv sweep with fmaf in element order, the 16/8/4/2/1 butterfly per warp, warp_even + warp_odd,
// the same float gate functions), so its accumulations and outputs equal a host run of either
// kernel bit for bit; ssm_ba_gates_oracle is an independent float64 computation.
// Inputs are bf16 bits; layouts as in metrale/ops/ssm_ba_gates.hpp.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace metrale::ref {

struct BaGatesRefShape {
  std::uint32_t m = 0, n = 0, k = 0, k_stride = 0, gate_stride = 0, nv = 0, vheads_per_group = 0;
};

struct BaGatesRefInputs {
  std::span<const std::uint16_t> x;       // [m][k_stride]
  std::span<const std::uint16_t> weight;  // [n][k]
  std::span<const float> a_log;           // [nv]
  std::span<const float> dt_bias;         // [nv]
};

// acc[token][n] in the kernels' order; [m][n].
std::vector<float> ssm_ba_gates_reference_acc(const BaGatesRefInputs& in, const BaGatesRefShape& shape);

// Writes columns [0, 2 nv) of each gate_out row (stride gate_stride); leaves the rest alone.
void ssm_ba_gates_reference(const BaGatesRefInputs& in, const BaGatesRefShape& shape, std::span<float> gate_out);

// The float64 oracle: [m][2 nv] (gate then beta), plain summation and double gate math.
std::vector<double> ssm_ba_gates_oracle(const BaGatesRefInputs& in, const BaGatesRefShape& shape);

// The float gate math the kernels use (templates/metrale_arith.cuh), for the reference.
float ba_gates_sigmoid(float x);
float ba_gates_decay(float acc, float a_log, float dt_bias);

}  // namespace metrale::ref
