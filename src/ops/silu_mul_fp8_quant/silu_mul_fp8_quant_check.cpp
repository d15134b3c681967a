// ops/silu_mul_fp8_quant/silu_mul_fp8_quant_check.cpp: the SiLU-and-mul FP8 quant op's check hook
// and the CPU references it compares the kernels with (written from the spec, not from the templates),
// and the profile's hook (its kernels launched at a shape on buffers of its own).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <optional>

#include "metrale/error.hpp"
#include "metrale/ops/fp8_act_quant.hpp"
#include "ops/core/library_ops.hpp"
#include "ops/fp8_act_quant/fp8_act_quant.hpp"
#include "ops/op_check_support.hpp"
#include "ops/op_profile_hook.hpp"
#include "ops/silu_mul_fp8_quant/silu_mul_fp8_quant.hpp"
#include "ref/bf16.hpp"

// ---- The SiLU-and-mul FP8 quant op's check hook (OpDeclaration::check):
// the parent (silu_mul_bf16, then the FP8 op's shared kernel) and the fused twin, each forced on
// the context's device, outputs and the parent's scratch h poisoned first. The parent in two
// steps: its h (read back from the scratch) within 1 bf16 ulp of the CPU reference's
// (silu_mul_h_reference, below: h = bf16(silu(g) * u) in float with the C library's expf; on a
// device expf is CUDA's, which may differ by an ulp, and a rounding boundary then moves h by one
// bf16 ulp), then its codes and scales byte-equal to the FP8 reference quantising the parent's
// own h (ref::fp8_act_quant_reference; "FP8-ref(h)" in the rows), so the quant step is held to exact
// bytes whatever h's last bit. The twin byte-equal to the parent (to the reference when the
// parent is absent): that equality is what publishes the twin.
// Column-major scales are read back by (token, group), so the padding rows of m_aligned are not
// compared.
// Shapes: full = the selftest's: Qwen3.5-27B's MLP (K 17408) with gate and up the two halves of
// one [M][2K] row at the twin's guard boundary (M = the smallest M it takes on the context's SMs,
// and one less), and M 6 at K 5120 with column-major UE8M0 scales; small = separate gate and up
// with padded row strides, the two halves of one row, and column-major power-of-two scales with M
// not a multiple of 4.
// Invariants: the "quant" role is the parent's second step, so asking for it runs the parent and
// judges that step alone (codes and scales == FP8-ref of the parent's h, whatever h is);
// the parent is skipped (named) when either of its two kernels is absent; an h element the parent
// leaves unwritten reads as a NaN poison and fails the h step.
namespace metrale::ops {
namespace {

constexpr std::string_view kParent = "parent";
constexpr std::string_view kQuant = "quant";
constexpr std::string_view kTwin = "twin";
constexpr std::uint32_t kQwenMlpK = 17408;
// How far the parent's h may be from the reference's: one bf16 ulp (a device's expf).
constexpr std::uint32_t kHUlps = 1;
// A bf16 NaN no kernel computes from finite inputs, for the parent's scratch.
constexpr std::uint16_t kPoisonBf16 = 0x7fab;
constexpr std::string_view kParentCheck = "h within 1 ulp, bytes == FP8-ref(h)";
static_assert(kHUlps == 1, "kParentCheck names the bound");
// What the quant step alone answers for (its kernel is the FP8 op's too: h is not its doing).
constexpr std::string_view kQuantCheck = "bytes == FP8-ref(h)";

struct Shape {
  std::uint32_t m = 0, k = 0;
  // gate and up as the two halves of one [M][2K] row (both strides 2K); else two buffers whose
  // rows are k + the pad elements long.
  bool halves = false;
  std::uint32_t gate_pad = 0, up_pad = 0;
  bool column_major_pow2 = false;

  [[nodiscard]] std::uint32_t gate_stride() const { return halves ? 2 * k : k + gate_pad; }
  [[nodiscard]] std::uint32_t up_stride() const { return halves ? 2 * k : k + up_pad; }
  [[nodiscard]] std::uint32_t m_aligned() const { return column_major_pow2 ? (m + 3) / 4 * 4 : 0; }
};

std::string shape_text(const Shape& s) {
  std::string strides = s.halves ? " gate|up halves of [M][2K]" : "";
  if (!s.halves && (s.gate_pad != 0 || s.up_pad != 0)) {
    strides = fmt::format(" gate_row_stride={} up_row_stride={}", s.gate_stride(), s.up_stride());
  }
  return fmt::format("M={} K={}{}{}", s.m, s.k, strides, s.column_major_pow2 ? " col-major pow2" : "");
}

// The inputs as the op reads them: one [M][2K] buffer (halves), or gate and up apart.
struct Inputs {
  std::vector<std::uint16_t> gate, up;  // up empty for halves: it is gate's second half
  [[nodiscard]] std::span<const std::uint16_t> gate_view() const { return gate; }
  [[nodiscard]] std::span<const std::uint16_t> up_view(const Shape& s) const {
    return s.halves ? std::span<const std::uint16_t>(gate).subspan(s.k) : std::span<const std::uint16_t>(up);
  }
};

// Random bf16 in [-4, 4): both signs, silu's bend near 0, and groups whose maxima differ.
Inputs make_inputs(const Shape& s, std::uint64_t seed) {
  Inputs in;
  in.gate = ref::random_bf16(std::size_t{s.m} * s.gate_stride(), seed, 4.0F);
  if (!s.halves) {
    in.up = ref::random_bf16(std::size_t{s.m} * s.up_stride(), seed + 1, 4.0F);
  }
  return in;
}

check::Quantised run_role(const OpContext& context, std::string_view role, std::uint64_t stream, const Shape& s,
                          const Inputs& in) {
  GpuBackend& gpu = *context.gpu;
  const std::uint32_t groups = s.k / kFp8QuantGroupSize;
  const std::size_t scale_count = std::size_t{s.column_major_pow2 ? s.m_aligned() : s.m} * groups;
  const check::Buffer gate(gpu, stream, in.gate);
  // Halves: up is gate's buffer K elements on (16-byte aligned: K is a multiple of 128).
  std::optional<check::Buffer> up_buffer;
  if (!s.halves) {
    up_buffer.emplace(gpu, stream, in.up);
  }
  const std::uint64_t up = s.halves ? gate.address() + std::uint64_t{s.k} * 2 : up_buffer->address();
  const check::Buffer q(gpu, stream, std::vector<std::uint8_t>(std::size_t{s.m} * s.k, check::kPoisonByte));
  const check::Buffer scales(gpu, stream, check::poisoned_floats(scale_count));
  // The parent's h lands in a scratch of ours, so it can be read back (the twin has none).
  std::optional<check::Buffer> scratch;
  if (role != kTwin) {
    scratch.emplace(gpu, stream, std::vector<std::uint16_t>(std::size_t{s.m} * s.k, kPoisonBf16));
  }
  const NamedArg args[] = {{"gate", gate.address()},
                           {"up", up},
                           {"q", q.address()},
                           {"scales", scales.address()},
                           {"scratch", scratch ? scratch->address() : 0},
                           {"m", s.m},
                           {"k", s.k},
                           {"gate_row_stride", s.gate_stride()},
                           {"up_row_stride", s.up_stride()},
                           {"scale_layout", s.column_major_pow2 ? 1U : 0U},
                           {"m_aligned", s.m_aligned()},
                           {"pow2_scales", s.column_major_pow2 ? 1U : 0U}};
  check::Quantised out;
  out.ms = check::run_forced(context, role, args, stream);
  out.q = q.download<std::uint8_t>();
  out.scales = check::scales_by_token(scales.download<float>(), s.m, groups, s.column_major_pow2, s.m_aligned());
  if (scratch) {
    out.h = scratch->download<std::uint16_t>();
  }
  return out;
}

// The parent's row: h within kHUlps of the reference's (unless only the quant step is judged),
// then codes and scales byte-equal to the FP8 reference of the parent's own h (so an h one ulp
// off on a device does not move the bytes the quant step is held to). A pass reports both; a
// failure the step that failed first.
void compare_parent(CheckResult& row, const check::Quantised& parent, const Shape& s,
                    std::span<const std::uint16_t> reference_h, bool judge_h) {
  check::compare_bf16_ulps(row, "h", parent.h, reference_h, s.k, kHUlps, "the reference");
  if (judge_h && row.verdict != CheckVerdict::kPassed) {
    return;
  }
  const std::string h_text = judge_h ? row.worst : fmt::format("h not judged here ({})", row.worst);
  const ref::Fp8RefResult own = ref::fp8_act_quant_reference(parent.h, {s.m, s.k, s.k, s.column_major_pow2});
  check::compare_quantised(row, parent, own.q, own.scales, s.k, "FP8-ref(h)");
  row.worst = fmt::format("{}; {}", h_text, row.worst);
}

// The parent needs both of its kernels.
std::optional<std::string> parent_skipped(const OpContext& context) {
  if (auto skipped = check::why_skipped(context, kParent)) {
    return skipped;
  }
  return check::why_skipped(context, kQuant);
}

void check_shape(const OpContext& context, const CheckOptions& options, const Shape& s, std::vector<CheckResult>& out) {
  const Inputs in = make_inputs(s, options.seed + 707 + s.m + s.k);
  const ref::SiluMulRefShape ref_shape{s.m, s.k, s.gate_stride(), s.up_stride(), s.column_major_pow2};
  const std::vector<std::uint16_t> reference_h = ref::silu_mul_h_reference(in.gate_view(), in.up_view(s), ref_shape);
  // What the twin is held to when the parent cannot run.
  const ref::Fp8RefResult expected = ref::fp8_act_quant_reference(reference_h, {s.m, s.k, s.k, s.column_major_pow2});
  check::QuantisedRoles roles;
  roles.parent = kParent;
  roles.twin = kTwin;
  roles.want_parent = options.role.empty() || options.role == kParent || options.role == kQuant;
  roles.want_twin = options.role.empty() || options.role == kTwin;
  roles.parent_skipped = parent_skipped(context);
  roles.run_parent = [&] { return run_role(context, kParent, options.stream, s, in); };
  roles.run_twin = [&] { return run_role(context, kTwin, options.stream, s, in); };
  // Asked for the quant step alone (its kernel's verification), the row judges that step only:
  // an h off is silu_mul_bf16's fault, found when that kernel is asked for.
  const bool judge_h = options.role != kQuant;
  roles.parent_check = judge_h ? kParentCheck : kQuantCheck;
  roles.compare_parent = [&, judge_h](CheckResult& row, const check::Quantised& parent) {
    compare_parent(row, parent, s, reference_h, judge_h);
  };
  check::check_parent_and_twin(context, shape_text(s), roles, {expected.q, expected.scales}, s.k, out);
}

}  // namespace

std::vector<CheckResult> silu_mul_fp8_quant_check(const OpContext& context, const CheckOptions& options) {
  std::vector<CheckResult> out;
  if (options.full_shapes) {
    // The guard's boundary at the twin's shipped groups per CTA (explain's number).
    const OpKernel& twin = context.kernel(kTwin);
    const std::uint32_t groups = twin.shipped ? twin.params.groups : kSiluMulTwinGroups;
    const std::uint32_t boundary = std::max(silu_mul_fused_min_m(kQwenMlpK, context.sm_count(), groups), 2U);
    check_shape(context, options, {.m = boundary, .k = kQwenMlpK, .halves = true}, out);
    check_shape(context, options, {.m = boundary - 1, .k = kQwenMlpK, .halves = true}, out);
    check_shape(context, options, {.m = 6, .k = 5120, .column_major_pow2 = true}, out);
    return out;
  }
  check_shape(context, options, {.m = 5, .k = 1024, .gate_pad = 8, .up_pad = 24}, out);
  check_shape(context, options, {.m = 3, .k = 384, .halves = true}, out);
  check_shape(context, options, {.m = 6, .k = 256, .gate_pad = 128, .column_major_pow2 = true}, out);
  return out;
}

}  // namespace metrale::ops

// ---- The SiLU-and-mul references; the quantiser is the FP8 op's reference.
namespace metrale::ref {
namespace {

constexpr std::uint32_t kGroup = 128;

void check_shape(std::span<const std::uint16_t> gate, std::span<const std::uint16_t> up, const SiluMulRefShape& s) {
  const auto rows_fit = [&](std::span<const std::uint16_t> x, std::uint32_t stride) {
    return s.m == 0 || x.size() >= std::size_t{s.m - 1} * stride + s.k;
  };
  if (s.k % kGroup != 0 || s.gate_row_stride < s.k || s.up_row_stride < s.k || !rows_fit(gate, s.gate_row_stride) ||
      !rows_fit(up, s.up_row_stride)) {
    throw ArgumentError(
        "silu_mul_fp8_quant reference: K must be a multiple of 128, both row strides >= K, gate and up M rows long");
  }
}

// Calls fn(token, column, g, u) for every element, g and u as floats.
template <typename Fn>
void for_each_element(std::span<const std::uint16_t> gate, std::span<const std::uint16_t> up, const SiluMulRefShape& s,
                      Fn fn) {
  for (std::uint32_t t = 0; t < s.m; ++t) {
    for (std::uint32_t c = 0; c < s.k; ++c) {
      fn(t, c, bf16_to_float(gate[std::size_t{t} * s.gate_row_stride + c]),
         bf16_to_float(up[std::size_t{t} * s.up_row_stride + c]));
    }
  }
}

}  // namespace

std::vector<std::uint16_t> silu_mul_h_reference(std::span<const std::uint16_t> gate, std::span<const std::uint16_t> up,
                                                const SiluMulRefShape& shape) {
  check_shape(gate, up, shape);
  std::vector<std::uint16_t> h(std::size_t{shape.m} * shape.k);
  for_each_element(gate, up, shape, [&](std::uint32_t t, std::uint32_t c, float g, float u) {
    const float silu = g / (1.0f + std::exp(-g));
    h[std::size_t{t} * shape.k + c] = bf16_from_float(silu * u);
  });
  return h;
}

std::vector<double> silu_mul_h_oracle(std::span<const std::uint16_t> gate, std::span<const std::uint16_t> up,
                                      const SiluMulRefShape& shape) {
  check_shape(gate, up, shape);
  std::vector<double> h(std::size_t{shape.m} * shape.k);
  for_each_element(gate, up, shape, [&](std::uint32_t t, std::uint32_t c, float g, float u) {
    const double gd = g;
    h[std::size_t{t} * shape.k + c] = gd / (1.0 + std::exp(-gd)) * static_cast<double>(u);
  });
  return h;
}

Fp8RefResult silu_mul_fp8_quant_reference(std::span<const std::uint16_t> gate, std::span<const std::uint16_t> up,
                                          const SiluMulRefShape& shape) {
  const std::vector<std::uint16_t> h = silu_mul_h_reference(gate, up, shape);
  return fp8_act_quant_reference(h, Fp8RefShape{shape.m, shape.k, shape.k, shape.pow2_scale});
}

}  // namespace metrale::ref

// ---- The profile's hook (OpDeclaration::profile): gate and up as the two halves of one [M][2K]
// buffer, as an MLP's gate-up projection writes them; the parent's two launches are its two rows
// ("parent", then "quant": the FP8 op's shared kernel over a scratch holding a bf16 pattern, so
// the quant step priced alone reads values), then the fused twin.
namespace metrale::ops {
namespace {

class SiluMulLaunches final : public ArgsLaunches<SiluMulFp8QuantArgs> {
 public:
  SiluMulLaunches(GpuBackend& gpu, const ProfileShape& shape) : ArgsLaunches(gpu) {
    const std::uint64_t m = shape.m;
    const DevicePtr gate_up = buffers_.bf16(m * shape.k * 2);
    scratch_ = buffers_.bf16(m * shape.k);
    args_.gate = gate_up;
    args_.up = DevicePtr{gate_up.address + std::uint64_t{shape.k} * 2};
    args_.q = buffers_.bytes(m * shape.k);
    args_.scales = buffers_.floats(m * (shape.k / kFp8QuantGroupSize));
    args_.m = shape.m;
    args_.k = shape.k;
    args_.gate_row_stride = args_.up_row_stride = 2 * shape.k;
    validate_silu_mul_fp8_quant_args(args_);
  }
  [[nodiscard]] Dim3 block(const ProfiledKernel& kernel, const KernelParams& params) const override {
    if (kernel.name == kSiluMulParentKernel) {
      return Dim3{params.block, 1, 1};
    }
    return Dim3{params.lanes * std::max<std::uint32_t>(params.groups, 1), 1, 1};
  }
  void launch(const ProfiledKernel& kernel, KernelHandle handle, const KernelParams& params) override {
    if (kernel.role == "twin") {
      launch_silu_mul_twin(buffers_.gpu(), handle, params, args_);
      return;
    }
    SiluMulFp8QuantKernels kernels;
    if (kernel.role == "parent") {
      kernels.silu_mul = handle;
      kernels.silu_mul_params = params;
      launch_silu_mul_bf16(buffers_.gpu(), kernels, args_, scratch_);
    } else {
      kernels.quant = handle;
      kernels.quant_params = params;
      launch_silu_mul_quant_step(buffers_.gpu(), kernels, args_, scratch_);
    }
  }

 private:
  DevicePtr scratch_;
};

}  // namespace

std::shared_ptr<const OpProfile> silu_mul_fp8_quant_profile() {
  return make_op_profile<SiluMulLaunches>(
      "silu-mul-fp8-quant",
      {{kSiluMulParentKernel, "parent"}, {kFp8QuantSharedKernel, "quant"}, {kSiluMulTwinKernel, "twin"}},
      [](const ProfileShape& shape) { return silu_mul_fp8_quant_floor_bytes(shape.m, shape.k); });
}

}  // namespace metrale::ops
