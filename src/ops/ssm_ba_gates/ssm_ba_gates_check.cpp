// ssm_ba_gates_check.cpp: the BA-gates op's check hook (OpDeclaration::check, what `metrale-jit
// selftest` and verification run): each role forced on the context's device at random problems,
// outputs poisoned first. The parent within 1e-5 relative of the kernel-order CPU reference (on
// the host backend that reference is bit-exact); the twin byte-equal to the parent (the seeds'
// parity; against the reference when the parent is absent); the tensor-core kernel (another
// summation order) within 1e-5 relative Frobenius error of the float64 oracle, on N(0,1)
// activations and 0.02 N(0,1) weights.
// Shapes: full = the selftest's Qwen3.5-27B shapes (N 96, K 5120; M 264 and 7, the tensor-core
// kernel at 264); small = shapes that still reach every path: a padded row stride, N below the
// tensor-core maximum of 128, a partial token tile, and K 64 / 128 / 256 / 512, which give the
// tensor-core launch each cluster split (1, 2, 4, 8) a device of sm_90 or later takes.
#include <fmt/format.h>

#include "metrale/ops/ssm_ba_gates.hpp"
#include "ops/core/library_ops.hpp"
#include "ops/op_check_support.hpp"
#include "ops/ssm_ba_gates/ssm_ba_gates_ref.hpp"
#include "ref/bf16.hpp"

namespace metrale::ops {
namespace {

constexpr std::string_view kParent = "parent";
constexpr std::string_view kTwin = "twin";
constexpr std::string_view kTensorCore = "tensor_core";
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

bool wanted(const CheckOptions& options, std::string_view role) { return options.role.empty() || options.role == role; }

// The parent against the reference, the twin against the parent's bytes, at one shape.
void check_seed_kernels(const OpContext& context, const CheckOptions& options, const Shape& shape,
                        std::vector<CheckResult>& out) {
  const Problem p = make_problem(shape, options.seed + shape.m * 31 + shape.k, false);
  const std::size_t cols = p.shape.gate_stride;
  std::vector<float> expected(std::size_t{p.shape.m} * cols, 0.0F);
  ref::ssm_ba_gates_reference(p.inputs(), p.shape, expected);
  std::optional<std::vector<float>> parent_out;
  const bool want_parent = wanted(options, kParent);
  if (want_parent || wanted(options, kTwin)) {
    CheckResult row = check::result_for(context, kParent, shape_text(p.shape),
                                        fmt::format("within {:g} rel of the kernel-order reference", kRelTolerance));
    if (const auto skipped = check::why_skipped(context, kParent)) {
      row.worst = *skipped;
    } else {
      Ran ran = run_role(context, kParent, options.stream, p);
      row.ms = ran.ms;
      check::compare_relative(row, "gate_out", ran.gate_out, expected, cols, kRelTolerance);
      parent_out = std::move(ran.gate_out);
    }
    if (want_parent) {
      out.push_back(std::move(row));
    }
  }
  if (!wanted(options, kTwin)) {
    return;
  }
  CheckResult row = check::result_for(
      context, kTwin, shape_text(p.shape),
      parent_out ? "bytes == parent" : fmt::format("within {:g} rel of the reference (no parent here)", kRelTolerance));
  if (const auto skipped = check::why_skipped(context, kTwin)) {
    row.worst = *skipped;
  } else {
    const Ran ran = run_role(context, kTwin, options.stream, p);
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
  if (!wanted(options, kTensorCore)) {
    return;
  }
  // A variant specialised on its tile count takes only the N of that count: check it there.
  Shape s = shape;
  if (const std::uint32_t tiles = context.kernel(kTensorCore).params.shape; tiles != 0) {
    s.n = tiles * 16;
  }
  const Problem p = make_problem(s, options.seed + 7 * s.m + s.k, true);
  CheckResult row = check::result_for(context, kTensorCore, shape_text(p.shape),
                                      fmt::format("rel Frobenius < {:g} vs float64 oracle", kFrobeniusBound));
  if (const auto skipped = check::why_skipped(context, kTensorCore)) {
    row.worst = *skipped;
    out.push_back(std::move(row));
    return;
  }
  BaGatesArgs args;
  args.m = p.shape.m;
  args.n = p.shape.n;
  args.k = p.shape.k;
  args.k_stride = p.shape.k_stride;
  const std::uint32_t cluster = ba_gates_mma_cluster(*context.gpu, context.kernel(kTensorCore).params, args);
  row.shape += fmt::format(" cluster={}", cluster);
  const Ran ran = run_role(context, kTensorCore, options.stream, p);
  row.ms = ran.ms;
  const std::vector<double> oracle = ref::ssm_ba_gates_oracle(p.inputs(), p.shape);
  check::compare_frobenius(row, "gate_out", ran.gate_out, oracle, p.shape.gate_stride, kFrobeniusBound);
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
    return out;
  }
  check_seed_kernels(context, options, {7, 96, 512, 520}, out);
  check_seed_kernels(context, options, {37, 64, 256, 256}, out);
  // A partial tile (M 77 or 200 of 128-token tiles), N 64 and 96, each K split.
  check_tensor_core(context, options, {200, 64, 64, 64}, out);
  check_tensor_core(context, options, {77, 96, 128, 128}, out);
  check_tensor_core(context, options, {200, 96, 256, 256}, out);
  check_tensor_core(context, options, {77, 64, 512, 520}, out);
  return out;
}

}  // namespace metrale::ops
