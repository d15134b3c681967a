// ops/silu_mul_fp8_quant/silu_mul_fp8_quant.cpp: the SiLU-and-mul FP8 quant op's launch path:
// argument checks, the parent's two launches and the twin's, the byte floor and the op call; the
// twin's guard, pick and verdict log. Uses no reference.
#include "ops/silu_mul_fp8_quant/silu_mul_fp8_quant.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "metrale/error.hpp"
#include "metrale/gpu/kernel_launch.hpp"
#include "metrale/target/levers.hpp"
#include "ops/fp8_act_quant/fp8_act_quant.hpp"
#include "ops/op_checks.hpp"
#include "ops/op_guard_table.hpp"
#include "ops/op_kernel_rules.hpp"
#include "ops/op_kernels.hpp"
#include "ops/op_verdict.hpp"

// ---- The SiLU-and-mul FP8 quant op: argument checks, the parent's two
// launches, the twin's launch, the byte floor and the op call.
namespace metrale::ops {
namespace {

constexpr std::string_view kOp = "silu_mul_fp8_quant";
// bf16 elements per 16-byte vector: a row stride in elements must keep every row 16-byte aligned.
constexpr std::uint32_t kVectorElements = 8;

void check_row_stride(std::string_view name, std::uint32_t stride, std::uint32_t k) {
  if (stride < k) {
    detail::argument_error(kOp, fmt::format("{}={} < K={}: the {} row is shorter than K", name, stride, k,
                                            name.substr(0, name.find('_'))));
  }
  if (stride % kVectorElements != 0) {
    detail::argument_error(kOp,
                           fmt::format("{}={} is not a multiple of 8 (rows must be 16-byte aligned)", name, stride));
  }
}

void check_shape(const SiluMulFp8QuantArgs& a) {
  using detail::argument_error;
  if (a.m == 0 || a.k == 0) {
    argument_error(kOp, fmt::format("empty shape M={} K={}: M and K must be positive", a.m, a.k));
  }
  if (a.k % kFp8QuantGroupSize != 0) {
    argument_error(kOp, fmt::format("K={} is not a multiple of the group size {}", a.k, kFp8QuantGroupSize));
  }
  check_row_stride("gate_row_stride", a.gate_row_stride, a.k);
  check_row_stride("up_row_stride", a.up_row_stride, a.k);
  detail::checked_extent_bytes(kOp, "gate extent (M x gate_row_stride bf16)", a.m, a.gate_row_stride, 2);
  detail::checked_extent_bytes(kOp, "up extent (M x up_row_stride bf16)", a.m, a.up_row_stride, 2);
  detail::checked_extent_bytes(kOp, "scratch extent (M x K bf16)", a.m, a.k, 2);
  detail::require_quantised_outputs(kOp, a.m, a.k, a.scale_layout == Fp8ScaleLayout::kColumnMajor, a.m_aligned);
}

void require_kernel_params(std::string_view kernel, const KernelParams& params) {
  if (auto violation = kernel_params_violation(kernel, params)) {
    detail::argument_error(kOp, fmt::format("{} variant {}: {}", kernel, params.tag(), *violation));
  }
}

}  // namespace

void validate_silu_mul_fp8_quant_args(const SiluMulFp8QuantArgs& args) {
  require_silu_mul_fp8_quant_tensors(args);
  check_shape(args);
}

std::uint64_t silu_mul_scratch_bytes(std::uint32_t m, std::uint32_t k) { return std::uint64_t{m} * k * 2; }

double silu_mul_fp8_quant_floor_bytes(std::uint32_t m, std::uint32_t k) {
  const auto mf = static_cast<double>(m);
  const auto kf = static_cast<double>(k);
  return mf * kf * 2 * 2 + mf * kf + mf * static_cast<double>(k / kFp8QuantGroupSize) * 4;
}

Dim3 silu_mul_bf16_grid(std::uint32_t m, std::uint32_t k, std::uint32_t block) {
  const std::uint32_t per_block = std::max<std::uint32_t>(block, 1);
  const std::uint32_t vectors = k / kVectorElements;
  return Dim3{m, (vectors + per_block - 1) / per_block, 1};
}

Fp8QuantArgs silu_mul_quant_step_args(const SiluMulFp8QuantArgs& args, DevicePtr scratch) {
  return Fp8QuantArgs{scratch,           args.q,         args.scales,    args.m, args.k, args.k,
                      args.scale_layout, args.m_aligned, args.scale_kind};
}

void launch_silu_mul_bf16(GpuBackend& gpu, const SiluMulFp8QuantKernels& kernels, const SiluMulFp8QuantArgs& args,
                          DevicePtr scratch, std::uint64_t stream) {
  KernelLaunch(gpu, kernels.silu_mul)
      .grid(silu_mul_bf16_grid(args.m, args.k, kernels.silu_mul_params.block))
      .block(Dim3{kernels.silu_mul_params.block, 1, 1})
      .arg_ptr(args.gate)
      .arg_ptr(args.up)
      .arg_ptr(scratch)
      .arg_u32(args.m)
      .arg_u32(args.k)
      .arg_u32(args.gate_row_stride)
      .arg_u32(args.up_row_stride)
      .launch(stream);
}

void launch_silu_mul_quant_step(GpuBackend& gpu, const SiluMulFp8QuantKernels& kernels, const SiluMulFp8QuantArgs& args,
                                DevicePtr scratch, std::uint64_t stream) {
  // The FP8 op's shared kernel exactly as that op launches it.
  Fp8QuantPick step;
  step.kernel = kernels.quant;
  step.grid = fp8_quant_grid(false, args.m, args.k, kernels.quant_params.groups);
  step.block = Dim3{kernels.quant_params.lanes * std::max<std::uint32_t>(kernels.quant_params.groups, 1), 1, 1};
  launch_fp8_quant(gpu, step, silu_mul_quant_step_args(args, scratch), stream);
}

void launch_silu_mul_parent(GpuBackend& gpu, const SiluMulFp8QuantKernels& kernels, const SiluMulFp8QuantArgs& args,
                            DevicePtr scratch, std::uint64_t stream) {
  validate_silu_mul_fp8_quant_args(args);
  detail::require_non_null(kOp, "scratch", scratch);
  detail::require_aligned(kOp, "scratch", scratch, 16);
  require_kernel_params(kSiluMulParentKernel, kernels.silu_mul_params);
  require_kernel_params(kFp8QuantSharedKernel, kernels.quant_params);
  launch_silu_mul_bf16(gpu, kernels, args, scratch, stream);
  launch_silu_mul_quant_step(gpu, kernels, args, scratch, stream);
}

void launch_silu_mul_twin(GpuBackend& gpu, KernelHandle twin, const KernelParams& params,
                          const SiluMulFp8QuantArgs& args, std::uint64_t stream) {
  validate_silu_mul_fp8_quant_args(args);
  require_kernel_params(kSiluMulTwinKernel, params);
  const Fp8ScaleStrides strides = fp8_scale_strides(silu_mul_quant_step_args(args, DevicePtr{}));
  KernelLaunch(gpu, twin)
      .grid(fp8_quant_grid(true, args.m, args.k, params.groups))
      .block(Dim3{params.lanes * params.groups, 1, 1})
      .arg_ptr(args.gate)
      .arg_ptr(args.up)
      .arg_ptr(args.q)
      .arg_ptr(args.scales)
      .arg_u32(args.m)
      .arg_u32(args.k)
      .arg_u32(args.gate_row_stride)
      .arg_u32(args.up_row_stride)
      .arg_u32(strides.m)
      .arg_u32(strides.g)
      .arg_u32(args.scale_kind == Fp8ScaleKind::kPow2 ? 1U : 0U)
      .launch(stream);
}

SiluMulFp8QuantPick silu_mul_fp8_quant(GpuBackend& gpu, const SiluMulFp8QuantKernels& kernels, bool requested,
                                       const SiluMulFp8QuantArgs& args, DevicePtr scratch, std::uint64_t stream) {
  validate_silu_mul_fp8_quant_args(args);
  const SiluMulFp8QuantPick pick =
      silu_mul_fp8_quant_pick(requested, kernels, args.m, args.k, device_sm_count(gpu, kernels.fallback_sm_count));
  silu_mul_log(pick, args.m, args.k);
  if (pick.twin) {
    launch_silu_mul_twin(gpu, kernels.twin, kernels.twin_params, args, stream);
  } else if (kernels.parent_present()) {
    launch_silu_mul_parent(gpu, kernels, args, scratch, stream);
  } else {
    throw BackendError(
        fmt::format("{}: no kernel to run: the parent ({} then {}) is incomplete and the twin is not "
                    "available ({})",
                    kOp, kSiluMulParentKernel, kFp8QuantSharedKernel, pick.reject.value_or("")));
  }
  return pick;
}

}  // namespace metrale::ops

// ---- The fused SiLU-and-mul FP8 twin's guard, pick and verdict log.
namespace metrale::ops {

std::optional<std::string_view> silu_mul_fp8_quant_fused_reject(bool requested, bool twin_present, bool parent_present,
                                                                std::uint32_t m, std::uint32_t k,
                                                                std::uint32_t sm_count, std::uint32_t groups,
                                                                std::optional<std::uint32_t> tuned_min_m) {
  // Without both parent kernels a refusal would hand the launch to a parent that cannot run, so
  // past the twin's own presence no condition can refuse it.
  const bool parent_absent = !parent_present;
  return first_failed({{kSiluMulRejects[1], twin_present},
                       {kSiluMulRejects[0], parent_absent || requested},
                       {kSiluMulTooFewCtas, parent_absent || past_twin_floor(fp8_quant_hopper_ctas(m, k, groups), m,
                                                                             sm_count, tuned_min_m)}});
}

std::uint32_t silu_mul_fused_min_m(std::uint32_t k, std::uint32_t sm_count, std::uint32_t groups) {
  return fp8_quant_hopper_min_m(k, sm_count, groups);
}

SiluMulFp8QuantPick silu_mul_fp8_quant_pick(bool requested, const SiluMulFp8QuantKernels& kernels, std::uint32_t m,
                                            std::uint32_t k, std::uint32_t sm_count) {
  const std::uint32_t groups = std::max<std::uint32_t>(kernels.twin_params.groups, 1);
  SiluMulFp8QuantPick pick;
  pick.reject = silu_mul_fp8_quant_fused_reject(requested, kernels.twin.present(), kernels.parent_present(), m, k,
                                                sm_count, groups, kernels.twin_tuned_min_m);
  pick.twin = !pick.reject.has_value();
  pick.requested = requested;
  if (pick.twin) {
    pick.grid = fp8_quant_grid(true, m, k, groups);
    pick.block = Dim3{kernels.twin_params.lanes * groups, 1, 1};
  }
  return pick;
}

const GuardTable& silu_mul_guard() { return guard_table_of<kSiluMulRejects>(); }

std::optional<OpLogSlot> silu_mul_log_slot(const SiluMulFp8QuantPick& pick) {
  return silu_mul_guard().slot_of(pick.reject, pick.requested);
}

std::optional<std::string> silu_mul_log_line(const SiluMulFp8QuantPick& pick, std::uint32_t m, std::uint32_t k,
                                             OnceSlots& said) {
  if (!silu_mul_guard().claim(pick.reject, pick.requested, said)) {
    return std::nullopt;
  }
  if (pick.reject) {
    return fmt::format(
        "SiLU-mul FP8 quant: the fused twin is NOT running at M={} K={}: {} (METRALE_SILU_MUL_FP8_QUANT_FUSED)", m, k,
        *pick.reject);
  }
  return fmt::format("SiLU-mul FP8 quant: {} (METRALE_SILU_MUL_FP8_QUANT_FUSED) M={} K={} grid=({},{},1) block={}",
                     kSiluMulTwinKernel, m, k, pick.grid.x, pick.grid.y, pick.block.x);
}

OnceSlots& silu_mul_log_slots() { return silu_mul_guard().process_slots(); }

void silu_mul_log(const SiluMulFp8QuantPick& pick, std::uint32_t m, std::uint32_t k) {
  log_verdict_line(silu_mul_log_line(pick, m, k, silu_mul_log_slots()));
}

}  // namespace metrale::ops
