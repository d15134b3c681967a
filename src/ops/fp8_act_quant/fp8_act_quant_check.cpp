// ops/fp8_act_quant/fp8_act_quant_check.cpp: the FP8 activation-quant op's check hook and the
// CPU references it compares the kernels with (written from the spec, not from the launch path),
// and the profile's hook (its kernels launched at a shape on buffers of its own).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "metrale/error.hpp"
#include "metrale/ops/fp8_act_quant.hpp"
#include "ops/core/library_ops.hpp"
#include "ops/fp8_act_quant/fp8_act_quant.hpp"
#include "ops/op_check_support.hpp"
#include "ops/op_profile_hook.hpp"
#include "ref/bf16.hpp"

// ---- The FP8 activation-quant op's check hook (OpDeclaration::check): each
// role forced on the context's device, outputs poisoned first. The parent (the shared kernel)
// byte-equal to the CPU reference, codes and scales (the reference computes the kernels' float
// scale and quotient with its own e4m3 rounding); the twin byte-equal to the parent (to the
// reference when the parent is absent). Column-major scales are read back by (token, group), so
// the padding rows of m_aligned are not compared.
// Shapes: full = the selftest's (M 53 and 52 at K 5120, the twin's guard boundary on 132 SMs; M 6 at
// K 1024 with column-major UE8M0 scales); small = M 5 at K 1024, a padded x row stride, and
// column-major power-of-two scales with M not a multiple of 4.
namespace metrale::ops {
namespace {

constexpr std::string_view kParent = "parent";
constexpr std::string_view kTwin = "twin";

struct Shape {
  std::uint32_t m = 0, k = 0, x_row_stride = 0;
  bool column_major_pow2 = false;
};

std::string shape_text(const Shape& s) {
  return fmt::format("M={} K={}{}{}", s.m, s.k,
                     s.x_row_stride != s.k ? fmt::format(" x_row_stride={}", s.x_row_stride) : "",
                     s.column_major_pow2 ? " col-major pow2" : "");
}

using check::Quantised;

std::uint32_t m_aligned_of(const Shape& s) { return s.column_major_pow2 ? (s.m + 3) / 4 * 4 : 0; }

Quantised run_role(const OpContext& context, std::string_view role, std::uint64_t stream, const Shape& s,
                   const std::vector<std::uint16_t>& x_values) {
  GpuBackend& gpu = *context.gpu;
  const std::uint32_t groups = s.k / kFp8QuantGroupSize;
  const std::uint32_t m_aligned = m_aligned_of(s);
  const std::size_t scale_count = std::size_t{s.column_major_pow2 ? m_aligned : s.m} * groups;
  const check::Buffer x(gpu, stream, x_values);
  const check::Buffer q(gpu, stream, std::vector<std::uint8_t>(std::size_t{s.m} * s.k, check::kPoisonByte));
  const check::Buffer scales(gpu, stream, check::poisoned_floats(scale_count));
  const NamedArg args[] = {{"x", x.address()},
                           {"q", q.address()},
                           {"scales", scales.address()},
                           {"m", s.m},
                           {"k", s.k},
                           {"x_row_stride", s.x_row_stride},
                           {"scale_layout", s.column_major_pow2 ? 1U : 0U},
                           {"m_aligned", m_aligned},
                           {"pow2_scales", s.column_major_pow2 ? 1U : 0U}};
  Quantised out;
  out.ms = check::run_forced(context, role, args, stream);
  out.q = q.download<std::uint8_t>();
  out.scales = check::scales_by_token(scales.download<float>(), s.m, groups, s.column_major_pow2, m_aligned);
  return out;
}

void check_shape(const OpContext& context, const CheckOptions& options, const Shape& s, std::vector<CheckResult>& out) {
  const auto x = ref::random_bf16(std::size_t{s.m} * s.x_row_stride, options.seed + 505 + s.m + s.k, 4.0F);
  const ref::Fp8RefResult expected = ref::fp8_act_quant_reference(x, {s.m, s.k, s.x_row_stride, s.column_major_pow2});
  check::QuantisedRoles roles;
  roles.parent = kParent;
  roles.twin = kTwin;
  roles.want_parent = options.role.empty() || options.role == kParent;
  roles.want_twin = options.role.empty() || options.role == kTwin;
  roles.parent_skipped = check::why_skipped(context, kParent);
  roles.run_parent = [&] { return run_role(context, kParent, options.stream, s, x); };
  roles.run_twin = [&] { return run_role(context, kTwin, options.stream, s, x); };
  check::check_parent_and_twin(context, shape_text(s), roles, {expected.q, expected.scales}, s.k, out);
}

}  // namespace

std::vector<CheckResult> fp8_act_quant_check(const OpContext& context, const CheckOptions& options) {
  std::vector<CheckResult> out;
  if (options.full_shapes) {
    check_shape(context, options, {53, 5120, 5120, false}, out);
    check_shape(context, options, {52, 5120, 5120, false}, out);
    check_shape(context, options, {6, 1024, 1024, true}, out);
    return out;
  }
  check_shape(context, options, {5, 1024, 1024, false}, out);
  check_shape(context, options, {3, 384, 392, false}, out);
  check_shape(context, options, {6, 256, 256, true}, out);
  return out;
}

}  // namespace metrale::ops

// ---- The FP8 references and their own e4m3fn rounding.
namespace metrale::ref {
namespace {

constexpr std::uint32_t kGroup = 128;
constexpr double kE4m3Max = 448.0;
constexpr int kE4m3Bias = 7;
constexpr int kE4m3MinNormalExp = -6;

void check_shape(std::span<const std::uint16_t> x, const Fp8RefShape& s) {
  if (s.k % kGroup != 0 || s.x_row_stride < s.k || x.size() < std::size_t{s.m} * s.x_row_stride) {
    throw ArgumentError("fp8_act_quant reference: K must be a multiple of 128, x_row_stride >= K, x M rows long");
  }
}

// The power of two at or above `s` (s > 0), from frexp: s = f * 2^e with f in [0.5, 1).
double pow2_at_or_above(double s) {
  int e = 0;
  const double f = std::frexp(s, &e);
  return f == 0.5 ? s : std::ldexp(1.0, e);
}

}  // namespace

std::uint8_t e4m3_encode(float value) {
  if (std::isnan(value)) {
    return 0x7f;
  }
  const std::uint8_t sign = std::signbit(value) ? 0x80 : 0x00;
  const double a = std::fabs(static_cast<double>(value));
  if (a >= kE4m3Max) {
    return sign | 0x7e;
  }
  int e = 0;
  std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1): the leading bit is 2^(e-1)
  // Below the smallest normal (zero included) the subnormal spacing applies.
  const int exponent = a < std::ldexp(1.0, kE4m3MinNormalExp) ? kE4m3MinNormalExp : e - 1;
  // Units of the mantissa's last place at this exponent; nearbyint rounds half to even.
  const double units = std::nearbyint(std::ldexp(a, 3 - exponent));
  // Normal codes are (biased exponent << 3) | mantissa = (exponent + 7 - 1) * 8 + units for
  // units in [8, 16); subnormals (exponent -6, units < 8) continue the same sequence, and a
  // carry to 16 units moves into the next binade with the same formula.
  const int code = (exponent + kE4m3Bias - 1) * 8 + static_cast<int>(units);
  return static_cast<std::uint8_t>(sign | std::min(code, 0x7e));
}

double e4m3_decode(std::uint8_t code) {
  const double sign = (code & 0x80) != 0 ? -1.0 : 1.0;
  const int exp_field = (code >> 3) & 0x0f;
  const int mantissa = code & 0x07;
  if (exp_field == 0x0f && mantissa == 0x07) {
    return std::nan("");
  }
  if (exp_field == 0) {
    return sign * std::ldexp(mantissa, kE4m3MinNormalExp - 3);
  }
  return sign * std::ldexp(8 + mantissa, exp_field - kE4m3Bias - 3);
}

double e4m3_step(double value) {
  const double a = std::fabs(value);
  if (a < std::ldexp(1.0, kE4m3MinNormalExp)) {
    return std::ldexp(1.0, kE4m3MinNormalExp - 3);
  }
  int e = 0;
  std::frexp(a, &e);
  return std::ldexp(1.0, e - 1 - 3);
}

Fp8RefResult fp8_act_quant_reference(std::span<const std::uint16_t> x, const Fp8RefShape& shape) {
  check_shape(x, shape);
  const std::uint32_t groups = shape.k / kGroup;
  Fp8RefResult out;
  out.q.resize(std::size_t{shape.m} * shape.k);
  out.scales.resize(std::size_t{shape.m} * groups);
  for (std::uint32_t t = 0; t < shape.m; ++t) {
    const std::uint16_t* row = x.data() + std::size_t{t} * shape.x_row_stride;
    for (std::uint32_t g = 0; g < groups; ++g) {
      float amax = 0.0f;
      for (std::uint32_t i = 0; i < kGroup; ++i) {
        amax = std::max(amax, std::fabs(bf16_to_float(row[g * kGroup + i])));
      }
      float scale = std::max(amax, 1e-10f) / 448.0f;
      if (shape.pow2_scale) {
        scale = static_cast<float>(pow2_at_or_above(scale));
      }
      out.scales[std::size_t{t} * groups + g] = scale;
      for (std::uint32_t i = 0; i < kGroup; ++i) {
        const std::size_t col = std::size_t{g} * kGroup + i;
        out.q[std::size_t{t} * shape.k + col] = e4m3_encode(bf16_to_float(row[col]) / scale);
      }
    }
  }
  return out;
}

Fp8OracleResult fp8_act_quant_oracle(std::span<const std::uint16_t> x, const Fp8RefShape& shape) {
  check_shape(x, shape);
  const std::uint32_t groups = shape.k / kGroup;
  Fp8OracleResult out;
  out.quotient.resize(std::size_t{shape.m} * shape.k);
  out.scales.resize(std::size_t{shape.m} * groups);
  for (std::uint32_t t = 0; t < shape.m; ++t) {
    const std::uint16_t* row = x.data() + std::size_t{t} * shape.x_row_stride;
    for (std::uint32_t g = 0; g < groups; ++g) {
      double amax = 1e-10;
      for (std::uint32_t i = 0; i < kGroup; ++i) {
        amax = std::max(amax, std::fabs(static_cast<double>(bf16_to_float(row[g * kGroup + i]))));
      }
      const double scale = shape.pow2_scale ? std::exp2(std::ceil(std::log2(amax / kE4m3Max))) : amax / kE4m3Max;
      out.scales[std::size_t{t} * groups + g] = scale;
      for (std::uint32_t i = 0; i < kGroup; ++i) {
        const std::size_t col = std::size_t{g} * kGroup + i;
        out.quotient[std::size_t{t} * shape.k + col] = static_cast<double>(bf16_to_float(row[col])) / scale;
      }
    }
  }
  return out;
}

}  // namespace metrale::ref

// ---- The profile's hook (OpDeclaration::profile): x, q and the row-major scales at M x K, the
// shared kernel then the twin, each on the grid fp8_quant_grid gives it (the op's own).
namespace metrale::ops {
namespace {

class Fp8Launches final : public ArgsLaunches<Fp8QuantArgs> {
 public:
  Fp8Launches(GpuBackend& gpu, const ProfileShape& shape) : ArgsLaunches(gpu) {
    const std::uint64_t m = shape.m;
    args_.x = buffers_.bf16(m * shape.k);
    args_.q = buffers_.bytes(m * shape.k);
    args_.scales = buffers_.floats(m * (shape.k / kFp8QuantGroupSize));
    args_.m = shape.m;
    args_.k = shape.k;
    args_.x_row_stride = shape.k;
    validate_fp8_quant_args(args_);
  }
  [[nodiscard]] Dim3 block(const ProfiledKernel& /*kernel*/, const KernelParams& params) const override {
    return Dim3{params.lanes * std::max<std::uint32_t>(params.groups, 1), 1, 1};
  }
  void launch(const ProfiledKernel& kernel, KernelHandle handle, const KernelParams& params) override {
    Fp8QuantPick pick;
    pick.kernel = handle;
    pick.twin = kernel.role == kTwin;
    pick.grid = fp8_quant_grid(pick.twin, args_.m, args_.k, std::max<std::uint32_t>(params.groups, 1));
    pick.block = block(kernel, params);
    launch_fp8_quant(buffers_.gpu(), pick, args_);
  }
};

}  // namespace

std::shared_ptr<const OpProfile> fp8_act_quant_profile() {
  return make_op_profile<Fp8Launches>("fp8-quant", {{kFp8QuantSharedKernel, "shared"}, {kFp8QuantTwinKernel, kTwin}},
                                      [](const ProfileShape& shape) {
                                        // x in bf16, q in e4m3, one fp32 scale per 128-element group.
                                        const auto m = static_cast<double>(shape.m);
                                        const auto k = static_cast<double>(shape.k);
                                        return m * k * 2 + m * k + m * (k / kFp8QuantGroupSize) * 4;
                                      });
}

}  // namespace metrale::ops
