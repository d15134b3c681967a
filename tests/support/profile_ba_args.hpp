// tests/support/profile_ba_args.hpp: the BA-gates arguments the profile tests launch with: inputs uploaded to a
// host backend, the output filled with a poison value first.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "metrale/gpu/gpu_backend.hpp"
#include "metrale/ops/ssm_ba_gates.hpp"
#include "support/isolated_runtime.hpp"

namespace metrale::test {

// An M x N x K launch with K_stride = K, gate_stride = N, nv = N / 2 and 3 value heads per group.
struct BaProfileInputs {
  std::uint32_t m = 0, n = 0, k = 0;
  const std::vector<std::uint16_t>* x = nullptr;
  const std::vector<std::uint16_t>* weight = nullptr;
  const std::vector<float>* a_log = nullptr;
  const std::vector<float>* dt_bias = nullptr;
  float poison = std::nanf("");  // what gate_out holds before the launch: never a value it could write
};

inline ops::BaGatesArgs upload_ba_args(GpuBackend& gpu, const BaProfileInputs& in) {
  ops::BaGatesArgs args;
  args.x = upload(gpu, *in.x);
  args.weight = upload(gpu, *in.weight);
  args.a_log = upload(gpu, *in.a_log);
  args.dt_bias = upload(gpu, *in.dt_bias);
  args.gate_out = upload(gpu, std::vector<float>(std::size_t{in.m} * in.n, in.poison));
  args.m = in.m;
  args.n = in.n;
  args.k = in.k;
  args.k_stride = in.k;
  args.gate_stride = in.n;
  args.nv = in.n / 2;
  args.vheads_per_group = 3;
  return args;
}

}  // namespace metrale::test
