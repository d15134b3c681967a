// ops/fp8_act_quant/fp8_act_quant.cpp: the FP8 activation-quant op's launch path: argument
// checks, launcher and typed entry, and the twin's CTA floor, grid, guard, pick and verdict log.
// Uses no reference (the references, in fp8_act_quant_check.cpp, are the independent check of it).
#include "ops/fp8_act_quant/fp8_act_quant.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "metrale/error.hpp"
#include "metrale/gpu/kernel_launch.hpp"
#include "metrale/ops/fp8_act_quant.hpp"
#include "metrale/target/levers.hpp"
#include "ops/op_checks.hpp"
#include "ops/op_guard_table.hpp"
#include "ops/op_kernel_rules.hpp"
#include "ops/op_kernels.hpp"
#include "ops/op_verdict.hpp"

// ---- The FP8 activation-quant op: argument checks, launcher and the entry.
namespace metrale::ops {
namespace {

constexpr std::string_view kOp = "fp8_act_quant";

void check_shape(const Fp8QuantArgs& a) {
  using detail::argument_error;
  if (a.m == 0 || a.k == 0) {
    argument_error(kOp, fmt::format("empty shape M={} K={}: M and K must be positive", a.m, a.k));
  }
  if (a.k % kFp8QuantGroupSize != 0) {
    argument_error(kOp, fmt::format("K={} is not a multiple of the group size {}", a.k, kFp8QuantGroupSize));
  }
  if (a.x_row_stride < a.k) {
    argument_error(kOp,
                   fmt::format("x_row_stride={} < K={}: the activation row is shorter than K", a.x_row_stride, a.k));
  }
  if (a.x_row_stride % 8 != 0) {
    argument_error(kOp, fmt::format("x_row_stride={} is not a multiple of 8 (activation rows must be 16-byte aligned)",
                                    a.x_row_stride));
  }
  detail::checked_extent_bytes(kOp, "x extent (M x x_row_stride bf16)", a.m, a.x_row_stride, 2);
  detail::require_quantised_outputs(kOp, a.m, a.k, a.scale_layout == Fp8ScaleLayout::kColumnMajor, a.m_aligned);
}

void check_kernel_params(const KernelParams& params, bool twin) {
  const std::string_view kernel = twin ? kFp8QuantTwinKernel : kFp8QuantSharedKernel;
  if (auto violation = kernel_params_violation(kernel, params)) {
    detail::argument_error(kOp, fmt::format("{} variant {}: {}", kernel, params.tag(), *violation));
  }
}

}  // namespace

Fp8ScaleStrides fp8_scale_strides(const Fp8QuantArgs& args) {
  if (args.scale_layout == Fp8ScaleLayout::kColumnMajor) {
    return Fp8ScaleStrides{1, args.m_aligned};
  }
  return Fp8ScaleStrides{args.k / kFp8QuantGroupSize, 1};
}

void validate_fp8_quant_args(const Fp8QuantArgs& args) {
  require_fp8_act_quant_tensors(args);
  check_shape(args);
}

void launch_fp8_quant(GpuBackend& gpu, const Fp8QuantPick& pick, const Fp8QuantArgs& args, std::uint64_t stream) {
  const Fp8ScaleStrides strides = fp8_scale_strides(args);
  KernelLaunch(gpu, pick.kernel)
      .grid(pick.grid)
      .block(pick.block)
      .arg_ptr(args.x)
      .arg_ptr(args.q)
      .arg_ptr(args.scales)
      .arg_u32(args.m)
      .arg_u32(args.k)
      .arg_u32(args.x_row_stride)
      .arg_u32(strides.m)
      .arg_u32(strides.g)
      .arg_u32(args.scale_kind == Fp8ScaleKind::kPow2 ? 1U : 0U)
      .launch(stream);
}

Fp8QuantPick fp8_act_quant(GpuBackend& gpu, const Fp8QuantKernels& kernels, bool requested, const Fp8QuantArgs& args,
                           std::uint64_t stream) {
  validate_fp8_quant_args(args);
  const Fp8QuantPick pick =
      fp8_quant_pick(requested, kernels, args.m, args.k, device_sm_count(gpu, kernels.fallback_sm_count));
  fp8_quant_log(pick, args.m, args.k);
  if (!pick.kernel.present()) {
    throw BackendError(
        fmt::format("{}: no kernel to run: per_token_group_quant_fp8 is absent and the twin is not "
                    "available ({})",
                    kOp, pick.reject.value_or("")));
  }
  check_kernel_params(pick.twin ? kernels.twin_params : kernels.shared_params, pick.twin);
  launch_fp8_quant(gpu, pick, args, stream);
  return pick;
}

}  // namespace metrale::ops

// ---- The FP8 twin's CTA floor, grid, guard, pick and verdict log.
namespace metrale::ops {
namespace {

std::uint32_t saturate_u32(std::uint64_t value) {
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(value, std::numeric_limits<std::uint32_t>::max()));
}

}  // namespace

Dim3 fp8_quant_grid(bool twin, std::uint32_t m, std::uint32_t k, std::uint32_t groups) {
  const std::uint32_t per_cta = std::max<std::uint32_t>(groups, 1);
  const std::uint32_t row_groups = k / kFp8QuantGroupSize;
  const std::uint32_t y = twin ? (row_groups + per_cta - 1) / per_cta : row_groups / per_cta;
  return Dim3{m, y, 1};
}

std::uint32_t fp8_quant_min_ctas(std::uint32_t sm_count) { return min_ctas(sm_count); }

std::uint32_t fp8_quant_hopper_ctas(std::uint32_t m, std::uint32_t k, std::uint32_t groups) {
  return saturate_u32(fp8_quant_grid(true, m, k, groups).volume());
}

std::uint32_t fp8_quant_hopper_min_m(std::uint32_t k, std::uint32_t sm_count, std::uint32_t groups) {
  const std::uint32_t y = std::max<std::uint32_t>(fp8_quant_grid(true, 1, k, groups).y, 1);
  return (fp8_quant_min_ctas(sm_count) + y - 1) / y;
}

std::optional<std::string_view> fp8_act_quant_hopper_reject(bool requested, bool twin_present, bool shared_present,
                                                            std::uint32_t m, std::uint32_t k, std::uint32_t sm_count,
                                                            std::uint32_t groups,
                                                            std::optional<std::uint32_t> tuned_min_m) {
  // Without the shared kernel a refusal would hand the launch to nothing, so past the twin's own
  // presence no condition can refuse it.
  const bool shared_absent = !shared_present;
  return first_failed({{kFp8QuantRejects[1], twin_present},
                       {kFp8QuantRejects[0], shared_absent || requested},
                       {kFp8QuantTooFewCtas, shared_absent || past_twin_floor(fp8_quant_hopper_ctas(m, k, groups), m,
                                                                              sm_count, tuned_min_m)}});
}

Fp8QuantPick fp8_quant_pick(bool requested, const Fp8QuantKernels& kernels, std::uint32_t m, std::uint32_t k,
                            std::uint32_t sm_count) {
  const auto reject = fp8_act_quant_hopper_reject(requested, kernels.twin.present(), kernels.shared.present(), m, k,
                                                  sm_count, kernels.twin_params.groups, kernels.twin_tuned_min_m);
  const bool twin = !reject.has_value();
  const KernelParams& params = twin ? kernels.twin_params : kernels.shared_params;
  Fp8QuantPick pick;
  pick.kernel = twin ? kernels.twin : kernels.shared;
  pick.grid = fp8_quant_grid(twin, m, k, params.groups);
  pick.block = Dim3{params.lanes * std::max<std::uint32_t>(params.groups, 1), 1, 1};
  pick.twin = twin;
  pick.reject = reject;
  pick.requested = requested;
  return pick;
}

const GuardTable& fp8_quant_guard() { return guard_table_of<kFp8QuantRejects>(); }

std::optional<OpLogSlot> fp8_quant_log_slot(const Fp8QuantPick& pick) {
  return fp8_quant_guard().slot_of(pick.reject, pick.requested);
}

std::optional<std::string> fp8_quant_log_line(const Fp8QuantPick& pick, std::uint32_t m, std::uint32_t k,
                                              OnceSlots& said) {
  if (!fp8_quant_guard().claim(pick.reject, pick.requested, said)) {
    return std::nullopt;
  }
  if (pick.reject) {
    return fmt::format("FP8 act-quant: the Hopper twin is NOT running at M={} K={}: {} (METRALE_FP8_ACT_QUANT_HOPPER)",
                       m, k, *pick.reject);
  }
  return fmt::format(
      "FP8 act-quant: per_token_group_quant_fp8_hopper (METRALE_FP8_ACT_QUANT_HOPPER) M={} K={} grid=({},{},1) "
      "block={}",
      m, k, pick.grid.x, pick.grid.y, pick.block.x);
}

OnceSlots& fp8_quant_log_slots() { return fp8_quant_guard().process_slots(); }

void fp8_quant_log(const Fp8QuantPick& pick, std::uint32_t m, std::uint32_t k) {
  log_verdict_line(fp8_quant_log_line(pick, m, k, fp8_quant_log_slots()));
}

}  // namespace metrale::ops
