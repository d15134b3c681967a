// fp8_act_quant_check.cpp: the FP8 activation-quant op's check hook (OpDeclaration::check): each
// role forced on the context's device, outputs poisoned first. The parent (the shared kernel)
// byte-equal to the CPU reference, codes and scales (the reference computes the kernels' float
// scale and quotient with its own e4m3 rounding); the twin byte-equal to the parent (to the
// reference when the parent is absent). Column-major scales are read back by (token, group), so
// the padding rows of m_aligned are not compared.
// Shapes: full = the selftest's (M 53 and 52 at K 5120, the twin's guard boundary on 132 SMs; M 6 at
// K 1024 with column-major UE8M0 scales); small = M 5 at K 1024, a padded x row stride, and
// column-major power-of-two scales with M not a multiple of 4.
#include <fmt/format.h>

#include "metrale/ops/fp8_act_quant.hpp"
#include "ops/core/library_ops.hpp"
#include "ops/fp8_act_quant/fp8_act_quant_ref.hpp"
#include "ops/op_check_support.hpp"
#include "ref/bf16.hpp"

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
