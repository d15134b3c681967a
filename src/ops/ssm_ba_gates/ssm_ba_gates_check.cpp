// ops/ssm_ba_gates/ssm_ba_gates_check.cpp: the SSM BA-gates op's check hook and the CPU
// references it compares the kernels with (kernel-order float, and the float64 oracle), and the
// profile's hook (its kernels launched at a shape on buffers of its own).
// Past ~400 lines: it checks four kernels (the seeds' pair against the kernel-order reference, the
// tensor-core kernel against the oracle, the decode kernel against the parent), each in one short
// function, beside the two references they use.
#include <fmt/format.h>

#include <array>
#include <cmath>

#include "metrale/error.hpp"
#include "metrale/ops/ssm_ba_gates.hpp"
#include "ops/core/library_ops.hpp"
#include "ops/op_check_support.hpp"
#include "ops/op_profile_hook.hpp"
#include "ops/ssm_ba_gates/ssm_ba_gates.hpp"
#include "ref/bf16.hpp"

// ---- The BA-gates op's check hook (OpDeclaration::check, what `metrale-jit
// selftest` and verification run): each role forced on the context's device at random problems,
// outputs poisoned first. The parent within 1e-5 relative of the kernel-order CPU reference (on
// the host backend that reference is bit-exact); the twin byte-equal to the parent (the seeds'
// parity; against the reference when the parent is absent); the tensor-core kernel (another
// summation order) within 1e-5 relative Frobenius error of the float64 oracle, on N(0,1)
// activations and 0.02 N(0,1) weights; the decode kernel (K split over a cluster, ranks added in
// order) within 1e-5 relative Frobenius error of the parent's output on those inputs, which the
// same run holds to the reference (of the float64 oracle when the parent is absent).
// Shapes: full = the selftest's Qwen3.5-27B shapes (N 96, K 5120; M 264 and 7, the tensor-core
// kernel at 264); small = shapes that still reach every path: a padded row stride, N below the
// tensor-core maximum of 128, a partial token tile, and K 64 / 128 / 256 / 512, which give the
// tensor-core launch each cluster split (1, 2, 4, 8) a device of sm_90 or later takes.
namespace metrale::ops {
namespace {

constexpr double kRelTolerance = 1e-5;
constexpr double kFrobeniusBound = 1e-5;
constexpr std::uint32_t kQwenVheadsPerGroup = 3;

struct Shape {
  std::uint32_t m = 0, n = 0, k = 0, k_stride = 0;
};

struct Problem {
  ref::BaGatesRefShape shape;  // gate_stride 2 nv: outputs are dense
  std::vector<std::uint16_t> x, weight;
  std::vector<float> a_log, dt_bias;
  [[nodiscard]] ref::BaGatesRefInputs inputs() const { return {x, weight, a_log, dt_bias}; }
};

// Uniform inputs for the seed kernels; N(0,1) activations and 0.02 N(0,1) weights (the shape of
// real ones) for the tensor-core kernel's error bound.
Problem make_problem(const Shape& s, std::uint64_t seed, bool normal) {
  const std::uint32_t k_stride = s.k_stride == 0 ? s.k : s.k_stride;
  const std::uint32_t nv = s.n / 2;
  Problem p;
  // Qwen3.5's 3 v-heads per key group where they divide nv, else 2 or 1 (the op needs a divisor).
  const std::uint32_t vheads = nv % kQwenVheadsPerGroup == 0 ? kQwenVheadsPerGroup : (nv % 2 == 0 ? 2 : 1);
  p.shape = {s.m, s.n, s.k, k_stride, 2 * nv, nv, vheads};
  const std::size_t x_count = std::size_t{s.m} * k_stride;
  const std::size_t w_count = std::size_t{s.n} * s.k;
  p.x = normal ? ref::random_normal_bf16(x_count, seed, 1.0F) : ref::random_bf16(x_count, seed);
  p.weight = normal ? ref::random_normal_bf16(w_count, seed + 1, 0.02F) : ref::random_bf16(w_count, seed + 1, 0.05F);
  p.a_log = ref::random_floats(nv, seed + 2, -1.0F, 1.0F);
  p.dt_bias = ref::random_floats(nv, seed + 3, -1.0F, 1.0F);
  return p;
}

std::string shape_text(const ref::BaGatesRefShape& s) {
  return fmt::format("M={} N={} K={}{}", s.m, s.n, s.k,
                     s.k_stride != s.k ? fmt::format(" K_stride={}", s.k_stride) : "");
}

struct Ran {
  std::vector<float> gate_out;  // [m][2 nv]
  double ms = 0;
};

Ran run_role(const OpContext& context, std::string_view role, std::uint64_t stream, const Problem& p) {
  GpuBackend& gpu = *context.gpu;
  const ref::BaGatesRefShape& s = p.shape;
  const check::Buffer x(gpu, stream, p.x);
  const check::Buffer weight(gpu, stream, p.weight);
  const check::Buffer a_log(gpu, stream, p.a_log);
  const check::Buffer dt_bias(gpu, stream, p.dt_bias);
  const check::Buffer gate_out(gpu, stream, check::poisoned_floats(std::size_t{s.m} * s.gate_stride));
  const NamedArg args[] = {{"x", x.address()},
                           {"weight", weight.address()},
                           {"a_log", a_log.address()},
                           {"dt_bias", dt_bias.address()},
                           {"gate_out", gate_out.address()},
                           {"m", s.m},
                           {"n", s.n},
                           {"k", s.k},
                           {"k_stride", s.k_stride},
                           {"gate_stride", s.gate_stride},
                           {"nv", s.nv},
                           {"vheads_per_group", s.vheads_per_group}};
  Ran ran;
  ran.ms = check::run_forced(context, role, args, stream);
  ran.gate_out = gate_out.download<float>();
  return ran;
}

// The sizes a K split is chosen from (no buffers): what a row names as the cluster it launched.
BaGatesArgs split_shape(const ref::BaGatesRefShape& s) {
  BaGatesArgs args;
  args.m = s.m;
  args.n = s.n;
  args.k = s.k;
  args.k_stride = s.k_stride;
  return args;
}

bool wanted(const CheckOptions& options, std::string_view role) { return options.role.empty() || options.role == role; }

// The parent against the reference, the twin against the parent's bytes, at one shape.
void check_seed_kernels(const OpContext& context, const CheckOptions& options, const Shape& shape,
                        std::vector<CheckResult>& out) {
  const Problem p = make_problem(shape, options.seed + shape.m * std::uint64_t{31} + shape.k, false);
  const std::size_t cols = p.shape.gate_stride;
  std::vector<float> expected(std::size_t{p.shape.m} * cols, 0.0F);
  ref::ssm_ba_gates_reference(p.inputs(), p.shape, expected);
  std::optional<std::vector<float>> parent_out;
  const bool want_parent = wanted(options, kBaGatesParentRole);
  if (want_parent || wanted(options, kBaGatesTwinRole)) {
    CheckResult row = check::result_for(context, kBaGatesParentRole, shape_text(p.shape),
                                        fmt::format("within {:g} rel of the kernel-order reference", kRelTolerance));
    if (const auto skipped = check::why_skipped(context, kBaGatesParentRole)) {
      row.worst = *skipped;
    } else {
      Ran ran = run_role(context, kBaGatesParentRole, options.stream, p);
      row.ms = ran.ms;
      check::compare_relative(row, "gate_out", ran.gate_out, expected, cols, kRelTolerance);
      parent_out = std::move(ran.gate_out);
    }
    if (want_parent) {
      out.push_back(std::move(row));
    }
  }
  if (!wanted(options, kBaGatesTwinRole)) {
    return;
  }
  CheckResult row = check::result_for(
      context, kBaGatesTwinRole, shape_text(p.shape),
      parent_out ? "bytes == parent" : fmt::format("within {:g} rel of the reference (no parent here)", kRelTolerance));
  if (const auto skipped = check::why_skipped(context, kBaGatesTwinRole)) {
    row.worst = *skipped;
  } else {
    const Ran ran = run_role(context, kBaGatesTwinRole, options.stream, p);
    row.ms = ran.ms;
    if (parent_out) {
      check::compare_bytes<float>(row, "gate_out", ran.gate_out, *parent_out, cols, "the parent");
    } else {
      check::compare_relative(row, "gate_out", ran.gate_out, expected, cols, kRelTolerance);
    }
  }
  out.push_back(std::move(row));
}

// The tensor-core kernel against the float64 oracle; the shape says the cluster split it launched.
void check_tensor_core(const OpContext& context, const CheckOptions& options, const Shape& shape,
                       std::vector<CheckResult>& out) {
  if (!wanted(options, kBaGatesTensorCoreRole)) {
    return;
  }
  // A variant specialised on its tile count takes only the N of that count: check it there.
  Shape s = shape;
  if (const std::uint32_t tiles = context.kernel(kBaGatesTensorCoreRole).params.shape; tiles != 0) {
    s.n = tiles * 16;
  }
  const Problem p = make_problem(s, options.seed + std::uint64_t{7} * s.m + s.k, true);
  CheckResult row = check::result_for(context, kBaGatesTensorCoreRole, shape_text(p.shape),
                                      fmt::format("rel Frobenius < {:g} vs float64 oracle", kFrobeniusBound));
  if (const auto skipped = check::why_skipped(context, kBaGatesTensorCoreRole)) {
    row.worst = *skipped;
    out.push_back(std::move(row));
    return;
  }
  const std::uint32_t cluster =
      ba_gates_mma_cluster(*context.gpu, context.kernel(kBaGatesTensorCoreRole).params, split_shape(p.shape));
  row.shape += fmt::format(" cluster={}", cluster);
  const Ran ran = run_role(context, kBaGatesTensorCoreRole, options.stream, p);
  row.ms = ran.ms;
  const std::vector<double> oracle = ref::ssm_ba_gates_oracle(p.inputs(), p.shape);
  check::compare_frobenius(row, "gate_out", ran.gate_out, oracle, p.shape.gate_stride, kFrobeniusBound, "oracle");
  out.push_back(std::move(row));
}

// The decode kernel against the parent at one shape; the shape says the K split it launched.
void check_decode(const OpContext& context, const CheckOptions& options, const Shape& shape,
                  std::vector<CheckResult>& out) {
  if (!wanted(options, kBaGatesDecodeRole)) {
    return;
  }
  const Problem p = make_problem(shape, options.seed + std::uint64_t{11} * shape.m + shape.k, true);
  const bool parent_here = !check::why_skipped(context, kBaGatesParentRole);
  CheckResult row = check::result_for(
      context, kBaGatesDecodeRole, shape_text(p.shape),
      fmt::format("rel Frobenius < {:g} vs {}", kFrobeniusBound, parent_here ? "the parent" : "float64 oracle"));
  if (const auto skipped = check::why_skipped(context, kBaGatesDecodeRole)) {
    row.worst = *skipped;
    out.push_back(std::move(row));
    return;
  }
  row.shape += fmt::format(
      " cluster={}",
      ba_gates_splitk_cluster(*context.gpu, context.kernel(kBaGatesDecodeRole).params, split_shape(p.shape)));
  const Ran ran = run_role(context, kBaGatesDecodeRole, options.stream, p);
  row.ms = ran.ms;
  std::vector<double> expected;
  if (parent_here) {
    const std::vector<float> parent = run_role(context, kBaGatesParentRole, options.stream, p).gate_out;
    expected.assign(parent.begin(), parent.end());
  } else {
    expected = ref::ssm_ba_gates_oracle(p.inputs(), p.shape);
  }
  check::compare_frobenius(row, "gate_out", ran.gate_out, expected, p.shape.gate_stride, kFrobeniusBound,
                           parent_here ? "parent" : "oracle");
  out.push_back(std::move(row));
}

}  // namespace

std::vector<CheckResult> ssm_ba_gates_check(const OpContext& context, const CheckOptions& options) {
  std::vector<CheckResult> out;
  if (options.full_shapes) {
    for (const std::uint32_t m : {264U, 7U}) {
      check_seed_kernels(context, options, {m, 96, 5120, 5120}, out);
    }
    check_tensor_core(context, options, {264, 96, 5120, 5120}, out);
    for (const std::uint32_t m : {1U, 64U}) {
      check_decode(context, options, {m, 96, 5120, 5120}, out);
    }
    return out;
  }
  check_seed_kernels(context, options, {7, 96, 512, 520}, out);
  check_seed_kernels(context, options, {37, 64, 256, 256}, out);
  // A partial tile (M 77 or 200 of 128-token tiles), N 64 and 96, each K split.
  check_tensor_core(context, options, {200, 64, 64, 64}, out);
  check_tensor_core(context, options, {77, 96, 128, 128}, out);
  check_tensor_core(context, options, {200, 96, 256, 256}, out);
  check_tensor_core(context, options, {77, 64, 512, 520}, out);
  // One token and a partial output column (N 64 of 6-output CTAs), a partial token tile past the
  // first (M 70 of 64-token tiles) with a padded stride, and K 512 / 1024 / 2048: splits 2, 4, 8
  // where the device has clusters.
  check_decode(context, options, {1, 64, 2048, 2048}, out);
  check_decode(context, options, {70, 96, 512, 520}, out);
  check_decode(context, options, {5, 96, 1024, 1024}, out);
  return out;
}

}  // namespace metrale::ops

// ---- The BA-gates references (kernel-order float, and the float64 oracle).
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

// ---- The profile's hook (OpDeclaration::profile): x and W in bf16, a_log and dt_bias, gate_out
// at M x N x K with dense strides; each role through the op's own launcher.
namespace metrale::ops {
namespace {

class BaLaunches final : public ArgsLaunches<BaGatesArgs> {
 public:
  BaLaunches(GpuBackend& gpu, const ProfileShape& shape) : ArgsLaunches(gpu) {
    const std::uint64_t m = shape.m;
    const std::uint32_t nv = shape.n / 2;
    args_.x = buffers_.bf16(m * shape.k);
    args_.weight = buffers_.bf16(std::size_t{shape.n} * shape.k);
    args_.a_log = buffers_.floats(nv);
    args_.dt_bias = buffers_.floats(nv);
    args_.gate_out = buffers_.floats(m * shape.n);
    args_.m = shape.m;
    args_.n = shape.n;
    args_.k = shape.k;
    args_.k_stride = shape.k;
    args_.gate_stride = shape.n;
    args_.nv = nv;
    args_.vheads_per_group = shape.vheads_per_group;
    validate_ba_gates_args(args_);
  }
  void launch(const ProfiledKernel& kernel, KernelHandle handle, const KernelParams& params) override {
    if (kernel.role == "mma") {
      launch_ba_gates_mma(buffers_.gpu(), handle, params, args_);
    } else if (kernel.role == kBaGatesDecodeRole) {
      launch_ba_gates_splitk(buffers_.gpu(), handle, params, args_);
    } else if (kernel.role == kBaGatesTwinRole) {
      launch_ba_gates_twin(buffers_.gpu(), handle, params, args_);
    } else {
      launch_ba_gates_parent(buffers_.gpu(), handle, params, args_);
    }
  }
};

}  // namespace

std::shared_ptr<const OpProfile> ssm_ba_gates_profile() {
  auto profile = make_op_profile<BaLaunches>("ba-gates",
                                             {{kBaGatesParentKernel, kBaGatesParentRole},
                                              {kBaGatesTwinKernel, kBaGatesTwinRole},
                                              {kBaGatesMmaKernel, "mma"},
                                              {kBaGatesSplitKKernel, kBaGatesDecodeRole}},
                                             [](const ProfileShape& shape) {
                                               const auto m = static_cast<double>(shape.m);
                                               const auto n = static_cast<double>(shape.n);
                                               const auto k = static_cast<double>(shape.k);
                                               // x and W in bf16, gate_out in fp32 (2 nv = N columns), a_log and
                                               // dt_bias fp32 [nv].
                                               return m * k * 2 + n * k * 2 + m * n * 4 + n / 2 * 4 * 2;
                                             });
  profile->has_n = true;
  profile->resolve_shape = [](ProfileShape shape) {
    if (shape.vheads_per_group == 0) {
      const std::uint32_t nv = shape.n / 2;
      shape.vheads_per_group = nv != 0 && nv % kQwenVheadsPerGroup == 0 ? kQwenVheadsPerGroup : std::max(nv, 1U);
    }
    return shape;
  };
  return profile;
}

}  // namespace metrale::ops
