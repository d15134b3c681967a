// ops/fused_add_rmsnorm/fused_add_rmsnorm_check.cpp: the fused residual-add + RMSNorm op's check
// hook and the CPU references it compares the kernels with (written from the spec, not from the
// templates), and the profile's hook (its kernels launched at a shape on buffers of its own).
// The hook (OpDeclaration::check): the parent and the twin, each forced on the context's device,
// every output poisoned first. The parent: residual_out byte-equal to the reference (one bf16
// rounding of a sum: exact everywhere), y within 1 bf16 ulp of the kernel-order reference (a
// device's rsqrtf may differ from the host's 1 / sqrt by an ulp of float, which can move a
// rounding boundary), and q, scales byte-equal to the FP8 reference quantising the parent's own y
// ("FP8-ref(y)"). The twin: every output byte-equal to the parent's (to the reference when the
// parent is absent); that equality is what publishes it.
// Shapes: full = the selftest's: Qwen3.5-27B's hidden 5120 in place with the FP8 output at M 16,
// and apart without it at M 7; small = in place at hidden 1024, padded strides apart with the FP8
// output at hidden 384, and power-of-two scales in place at hidden 256. Every shape is one the
// twin's guard takes (hidden and strides multiples of 8).
#include <fmt/format.h>

#include <cmath>
#include <optional>

#include "metrale/error.hpp"
#include "ops/fused_add_rmsnorm/fused_add_rmsnorm.hpp"
#include "ops/op_check_support.hpp"
#include "ops/op_profile_hook.hpp"
#include "ref/bf16.hpp"

namespace metrale::ops {
namespace {

constexpr std::string_view kParent = "parent";
constexpr std::string_view kTwin = "twin";
constexpr std::uint32_t kYUlps = 1;
constexpr std::uint16_t kPoisonBf16 = 0x7fab;  // a bf16 NaN no kernel computes from finite inputs

struct Shape {
  std::uint32_t m = 0, hidden = 0, x_pad = 0, r_pad = 0;
  bool in_place = false, quantised = false, pow2 = false;
  [[nodiscard]] std::uint32_t x_stride() const { return hidden + x_pad; }
  [[nodiscard]] std::uint32_t r_stride() const { return hidden + r_pad; }
  [[nodiscard]] ref::RmsnormRefShape ref_shape() const { return {m, hidden, x_stride(), r_stride(), 1e-6F}; }
};

std::string shape_text(const Shape& s) {
  return fmt::format("M={} hidden={}{}{}{}", s.m, s.hidden, s.in_place ? " in place" : "",
                     s.x_pad + s.r_pad != 0 ? fmt::format(" strides {}/{}", s.x_stride(), s.r_stride()) : "",
                     s.quantised ? (s.pow2 ? " +fp8 pow2" : " +fp8") : "");
}

struct Inputs {
  std::vector<std::uint16_t> x, residual, weight;
};

struct Outputs {
  std::vector<std::uint16_t> y, residual_out;
  std::vector<std::uint8_t> q;
  std::vector<float> scales;
  double ms = 0;
};

// residual_out of a strided run, densely ([m][hidden]), for comparisons.
std::vector<std::uint16_t> dense_rows(const std::vector<std::uint16_t>& rows, const Shape& s) {
  std::vector<std::uint16_t> out;
  for (std::uint32_t t = 0; t < s.m; ++t) {
    const auto first = rows.begin() + static_cast<std::ptrdiff_t>(std::size_t{t} * s.r_stride());
    out.insert(out.end(), first, first + s.hidden);
  }
  return out;
}

Outputs run_role(const OpContext& context, std::string_view role, std::uint64_t stream, const Shape& s,
                 const Inputs& in) {
  GpuBackend& gpu = *context.gpu;
  const check::Buffer x(gpu, stream, in.x);
  const check::Buffer residual(gpu, stream, in.residual);
  const check::Buffer weight(gpu, stream, in.weight);
  const check::Buffer y(gpu, stream, std::vector<std::uint16_t>(std::size_t{s.m} * s.hidden, kPoisonBf16));
  std::optional<check::Buffer> apart;
  if (!s.in_place) {
    apart.emplace(gpu, stream, std::vector<std::uint16_t>(in.residual.size(), kPoisonBf16));
  }
  const check::Buffer& residual_out = s.in_place ? residual : *apart;
  const std::size_t codes = s.quantised ? std::size_t{s.m} * s.hidden : 1;
  const check::Buffer q(gpu, stream, std::vector<std::uint8_t>(codes, check::kPoisonByte));
  const check::Buffer scales(gpu, stream, check::poisoned_floats(s.quantised ? codes / 128 : 1));
  const NamedArg args[] = {{"x", x.address()},
                           {"residual", residual.address()},
                           {"weight", weight.address()},
                           {"y", y.address()},
                           {"residual_out", residual_out.address()},
                           {"q", s.quantised ? q.address() : 0},
                           {"scales", s.quantised ? scales.address() : 0},
                           {"m", s.m},
                           {"hidden", s.hidden},
                           {"x_row_stride", s.x_stride()},
                           {"residual_row_stride", s.r_stride()},
                           {"pow2_scales", s.pow2 ? 1U : 0U}};
  Outputs out;
  out.ms = check::run_forced(context, role, args, stream);
  out.y = y.download<std::uint16_t>();
  out.residual_out = dense_rows(residual_out.download<std::uint16_t>(), s);
  if (s.quantised) {
    out.q = q.download<std::uint8_t>();
    out.scales = scales.download<float>();
  }
  return out;
}

// One step of a row's comparison, skipped once a step failed; a pass appends its words to `said`
// (the first that fails names the row, a pass lists them all).
void compare_step(CheckResult& row, std::string& said, const std::function<void(CheckResult&)>& step) {
  if (row.verdict == CheckVerdict::kFailed) {
    return;
  }
  step(row);
  if (row.verdict == CheckVerdict::kPassed) {
    said += said.empty() ? row.worst : "; " + row.worst;
    row.worst = said;
  }
}

// Every output of `got` byte for byte against `want`.
void compare_all(CheckResult& row, const Outputs& got, const Outputs& want, const Shape& s, std::string_view against) {
  std::string said;
  compare_step(row, said, [&](CheckResult& r) {
    check::compare_bytes<std::uint16_t>(r, "residual_out", got.residual_out, want.residual_out, s.hidden, against);
  });
  compare_step(row, said,
               [&](CheckResult& r) { check::compare_bytes<std::uint16_t>(r, "y", got.y, want.y, s.hidden, against); });
  if (s.quantised) {
    compare_step(row, said, [&](CheckResult& r) {
      check::Quantised quantised{got.q, got.scales};
      check::compare_quantised(r, quantised, want.q, want.scales, s.hidden, against);
    });
  }
}

void compare_parent(CheckResult& row, const Outputs& parent, const Outputs& reference, const Shape& s) {
  std::string said;
  compare_step(row, said, [&](CheckResult& r) {
    check::compare_bytes<std::uint16_t>(r, "residual_out", parent.residual_out, reference.residual_out, s.hidden,
                                        "the reference");
  });
  compare_step(row, said, [&](CheckResult& r) {
    check::compare_bf16_ulps(r, "y", parent.y, reference.y, s.hidden, kYUlps, "the reference");
  });
  if (s.quantised) {
    const ref::Fp8RefResult own = ref::fp8_act_quant_reference(parent.y, {s.m, s.hidden, s.hidden, s.pow2});
    compare_step(row, said, [&](CheckResult& r) {
      check::Quantised quantised{parent.q, parent.scales};
      check::compare_quantised(r, quantised, own.q, own.scales, s.hidden, "FP8-ref(y)");
    });
  }
}

void check_shape(const OpContext& context, const CheckOptions& options, const Shape& s, std::vector<CheckResult>& out) {
  const std::uint64_t seed = options.seed + 911 + s.m + s.hidden;
  Inputs in;
  in.x = ref::random_bf16(std::size_t{s.m} * s.x_stride(), seed, 4.0F);
  in.residual = ref::random_bf16(std::size_t{s.m} * s.r_stride(), seed + 1, 4.0F);
  in.weight = ref::random_bf16(s.hidden, seed + 2, 2.0F);
  const OpKernel& parent_kernel = context.kernel(kParent);
  const std::uint32_t block = parent_kernel.shipped ? parent_kernel.params.block : kRmsnormBlock;
  const ref::RmsnormRefResult r = ref::rmsnorm_reference(in.x, in.residual, in.weight, s.ref_shape(), block);
  Outputs reference{r.y, r.residual_out, {}, {}, 0};
  if (s.quantised) {
    const ref::Fp8RefResult fp8 = ref::fp8_act_quant_reference(r.y, {s.m, s.hidden, s.hidden, s.pow2});
    reference.q = fp8.q;
    reference.scales = fp8.scales;
  }
  const bool want_parent = options.role.empty() || options.role == kParent;
  const bool want_twin = options.role.empty() || options.role == kTwin;
  std::optional<Outputs> parent;
  CheckResult parent_row = check::result_for(
      context, kParent, shape_text(s),
      s.quantised ? "residual_out ==, y within 1 ulp, bytes == FP8-ref(y)" : "residual_out ==, y within 1 ulp");
  static_assert(kYUlps == 1, "the check's text names the bound");
  if (const auto skipped = check::why_skipped(context, kParent)) {
    parent_row.worst = *skipped;
  } else {
    parent = run_role(context, kParent, options.stream, s, in);
    parent_row.ms = parent->ms;
    compare_parent(parent_row, *parent, reference, s);
  }
  if (want_parent) {
    out.push_back(std::move(parent_row));
  }
  if (!want_twin) {
    return;
  }
  CheckResult row = check::result_for(context, kTwin, shape_text(s), parent ? "bytes == parent" : "bytes == reference");
  if (const auto skipped = check::why_skipped(context, kTwin)) {
    row.worst = *skipped;
  } else {
    const Outputs twin = run_role(context, kTwin, options.stream, s, in);
    row.ms = twin.ms;
    compare_all(row, twin, parent ? *parent : reference, s, parent ? "the parent" : "the reference");
  }
  out.push_back(std::move(row));
}

}  // namespace

std::vector<CheckResult> fused_add_rmsnorm_check(const OpContext& context, const CheckOptions& options) {
  std::vector<CheckResult> out;
  if (options.full_shapes) {
    check_shape(context, options, {.m = 16, .hidden = 5120, .in_place = true, .quantised = true}, out);
    check_shape(context, options, {.m = 7, .hidden = 5120}, out);
    return out;
  }
  check_shape(context, options, {.m = 3, .hidden = 1024, .in_place = true}, out);
  check_shape(context, options, {.m = 5, .hidden = 384, .x_pad = 8, .r_pad = 24, .quantised = true}, out);
  check_shape(context, options, {.m = 2, .hidden = 256, .in_place = true, .quantised = true, .pow2 = true}, out);
  return out;
}

}  // namespace metrale::ops

// ---- The references.
namespace metrale::ref {
namespace {

constexpr std::uint32_t kChunk = 8;
constexpr std::uint32_t kWarpLanes = 32;

void check_shape(std::span<const std::uint16_t> x, std::span<const std::uint16_t> residual,
                 std::span<const std::uint16_t> weight, const RmsnormRefShape& s) {
  const auto rows_fit = [&](std::span<const std::uint16_t> v, std::uint32_t stride) {
    return s.m == 0 || v.size() >= std::size_t{s.m - 1} * stride + s.hidden;
  };
  if (s.x_row_stride < s.hidden || s.residual_row_stride < s.hidden || !rows_fit(x, s.x_row_stride) ||
      !rows_fit(residual, s.residual_row_stride) || weight.size() < s.hidden) {
    throw ArgumentError(
        "fused_add_rmsnorm reference: both row strides >= hidden, x and residual M rows long, weight hidden long");
  }
}

// z = bf16(x + r) of row t, [hidden].
std::vector<std::uint16_t> added_row(std::span<const std::uint16_t> x, std::span<const std::uint16_t> residual,
                                     const RmsnormRefShape& s, std::uint32_t t) {
  std::vector<std::uint16_t> z(s.hidden);
  for (std::uint32_t e = 0; e < s.hidden; ++e) {
    z[e] = bf16_from_float(bf16_to_float(x[std::size_t{t} * s.x_row_stride + e]) +
                           bf16_to_float(residual[std::size_t{t} * s.residual_row_stride + e]));
  }
  return z;
}

// The xor butterfly over 32 values (16, 8, 4, 2, 1): lane 0's result.
float butterfly(std::vector<float> lanes) {
  for (std::uint32_t offset = kWarpLanes / 2; offset > 0; offset /= 2) {
    std::vector<float> next(kWarpLanes);
    for (std::uint32_t l = 0; l < kWarpLanes; ++l) {
      next[l] = lanes[l] + lanes[l ^ offset];
    }
    lanes = std::move(next);
  }
  return lanes[0];
}

// sum(z^2) in the kernels' order: thread t's chunks t, t + block, ... in element order (fma),
// then the butterfly per warp and over the warps' sums (zeros past the last warp).
float ordered_sum_of_squares(const std::vector<std::uint16_t>& z, std::uint32_t block) {
  std::vector<float> partial(block, 0.0F);
  for (std::uint32_t t = 0; t < block; ++t) {
    for (std::size_t chunk = t; chunk * kChunk < z.size(); chunk += block) {
      for (std::size_t e = chunk * kChunk; e < std::min(z.size(), chunk * kChunk + kChunk); ++e) {
        const float v = bf16_to_float(z[e]);
        partial[t] = std::fma(v, v, partial[t]);
      }
    }
  }
  std::vector<float> warps(kWarpLanes, 0.0F);
  for (std::uint32_t w = 0; w < block / kWarpLanes; ++w) {
    warps[w] = butterfly({partial.begin() + w * kWarpLanes, partial.begin() + (w + 1) * kWarpLanes});
  }
  return butterfly(warps);
}

}  // namespace

RmsnormRefResult rmsnorm_reference(std::span<const std::uint16_t> x, std::span<const std::uint16_t> residual,
                                   std::span<const std::uint16_t> weight, const RmsnormRefShape& s,
                                   std::uint32_t block) {
  check_shape(x, residual, weight, s);
  if (block < kWarpLanes || block > 1024 || block % kWarpLanes != 0) {
    throw ArgumentError(fmt::format("fused_add_rmsnorm reference: block {} is not whole warps in [32, 1024]", block));
  }
  RmsnormRefResult out;
  for (std::uint32_t t = 0; t < s.m; ++t) {
    const std::vector<std::uint16_t> z = added_row(x, residual, s, t);
    const float mean = ordered_sum_of_squares(z, block) / static_cast<float>(s.hidden);
    const float inv = 1.0F / std::sqrt(mean + s.eps);
    for (std::uint32_t e = 0; e < s.hidden; ++e) {
      out.y.push_back(bf16_from_float(bf16_to_float(z[e]) * inv * bf16_to_float(weight[e])));
    }
    out.residual_out.insert(out.residual_out.end(), z.begin(), z.end());
  }
  return out;
}

std::vector<double> rmsnorm_oracle(std::span<const std::uint16_t> x, std::span<const std::uint16_t> residual,
                                   std::span<const std::uint16_t> weight, const RmsnormRefShape& s) {
  check_shape(x, residual, weight, s);
  std::vector<double> y;
  for (std::uint32_t t = 0; t < s.m; ++t) {
    const std::vector<std::uint16_t> z = added_row(x, residual, s, t);
    double sum = 0;
    for (const std::uint16_t v : z) {
      sum += static_cast<double>(bf16_to_float(v)) * bf16_to_float(v);
    }
    const double inv = 1.0 / std::sqrt(sum / s.hidden + static_cast<double>(s.eps));
    for (std::uint32_t e = 0; e < s.hidden; ++e) {
      y.push_back(static_cast<double>(bf16_to_float(z[e])) * inv * bf16_to_float(weight[e]));
    }
  }
  return y;
}

}  // namespace metrale::ref

// ---- The profile's hook (OpDeclaration::profile): hidden = K, in place (residual_out =
// residual, as vLLM calls it), with the FP8 output; both kernels through the op's own launcher.
namespace metrale::ops {
namespace {

class RmsnormLaunches final : public ArgsLaunches<FusedAddRmsnormArgs> {
 public:
  RmsnormLaunches(GpuBackend& gpu, const ProfileShape& shape) : ArgsLaunches(gpu) {
    const std::uint64_t m = shape.m;
    args_.x = buffers_.bf16(m * shape.k);
    args_.residual = buffers_.bf16(m * shape.k);
    args_.weight = buffers_.bf16(shape.k);
    args_.y = buffers_.bf16(m * shape.k);
    args_.residual_out = args_.residual;
    args_.q = buffers_.bytes(m * shape.k);
    args_.scales = buffers_.floats(m * (shape.k / kFp8QuantGroupSize));
    args_.m = shape.m;
    args_.hidden = args_.x_row_stride = args_.residual_row_stride = shape.k;
    validate_fused_add_rmsnorm_args(args_);
  }
  void launch(const ProfiledKernel& kernel, KernelHandle handle, const KernelParams& params) override {
    launch_fused_add_rmsnorm(buffers_.gpu(), handle, kernel.name, params, args_);
  }
};

}  // namespace

std::shared_ptr<const OpProfile> fused_add_rmsnorm_profile() {
  // K is hidden; in place, with the FP8 output.
  return make_op_profile<RmsnormLaunches>(
      "fused-add-rmsnorm", {{kRmsnormParentKernel, "parent"}, {kRmsnormTwinKernel, "twin"}},
      [](const ProfileShape& shape) { return fused_add_rmsnorm_floor_bytes(shape.m, shape.k, true); });
}

}  // namespace metrale::ops
