// fp8_act_quant.cpp: the FP8 activation-quant op: argument checks, launcher and the entry.
#include "metrale/ops/fp8_act_quant.hpp"

#include <fmt/format.h>

#include "metrale/error.hpp"
#include "metrale/gpu/kernel_launch.hpp"
#include "ops/fp8_act_quant/fp8_act_quant_floor.hpp"
#include "ops/op_checks.hpp"
#include "ops/op_kernels.hpp"
#include "ops/op_verdict.hpp"

namespace metrale::ops {
namespace {

constexpr std::string_view kOp = "fp8_act_quant";

void check_pointers(const Fp8QuantArgs& a) {
  detail::require_non_null(kOp, "x", a.x);
  detail::require_non_null(kOp, "q", a.q);
  detail::require_non_null(kOp, "scales", a.scales);
  detail::require_aligned(kOp, "x", a.x, 16);
  detail::require_aligned(kOp, "q", a.q, 8);
  detail::require_aligned(kOp, "scales", a.scales, 4);
}

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
  check_pointers(args);
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
