// ops/fused_add_rmsnorm/fused_add_rmsnorm.cpp: the fused residual-add + RMSNorm op's launch
// path: argument checks, the one launcher of both kernels, the byte floor, the twin's guard, pick
// and verdict log, and the op call. Uses no reference.
#include "ops/fused_add_rmsnorm/fused_add_rmsnorm.hpp"

#include <fmt/format.h>

#include <cmath>

#include "metrale/error.hpp"
#include "metrale/gpu/kernel_launch.hpp"
#include "ops/op_checks.hpp"
#include "ops/op_kernel_rules.hpp"
#include "ops/op_kernels.hpp"

namespace metrale::ops {
namespace {

constexpr std::string_view kOp = "fused_add_rmsnorm";
constexpr std::uint32_t kVectorElements = 8;  // bf16 per 16-byte vector
constexpr std::uint32_t kWarp = 32;

void check_tensors(const FusedAddRmsnormArgs& a) {
  require_fused_add_rmsnorm_tensors(a);  // names, nulls and alignments: the declaration's
  if ((a.q.address == 0) != (a.scales.address == 0)) {
    detail::argument_error(kOp, "q and scales: give both (the FP8 output) or neither");
  }
}

void check_shape(const FusedAddRmsnormArgs& a) {
  using detail::argument_error;
  if (a.m == 0 || a.hidden == 0) {
    argument_error(kOp, fmt::format("empty shape M={} hidden={}: both must be positive", a.m, a.hidden));
  }
  if (a.m > detail::kMaxGridX) {
    argument_error(kOp, fmt::format("M={} exceeds the grid's x limit {} (one CTA per row)", a.m, detail::kMaxGridX));
  }
  // The extents' labels are literals: a call that passes formats nothing (the per-call path).
  struct Stride {
    std::string_view name;
    std::string_view extent;
    std::uint32_t value;
  };
  const Stride strides[] = {
      {"x_row_stride", "x_row_stride extent (M x x_row_stride bf16)", a.x_row_stride},
      {"residual_row_stride", "residual_row_stride extent (M x residual_row_stride bf16)", a.residual_row_stride}};
  for (const Stride& stride : strides) {
    if (stride.value < a.hidden) {
      argument_error(
          kOp, fmt::format("{}={} < hidden={}: a row is shorter than hidden", stride.name, stride.value, a.hidden));
    }
    detail::checked_extent_bytes(kOp, stride.extent, a.m, stride.value, 2);
  }
  detail::checked_extent_bytes(kOp, "y extent (M x hidden bf16)", a.m, a.hidden, 2);
  if (!std::isfinite(a.eps) || a.eps < 0.0F) {
    argument_error(kOp, fmt::format("eps={} must be finite and >= 0", a.eps));
  }
  if (a.quantised()) {
    if (a.hidden % kFp8QuantGroupSize != 0) {
      argument_error(kOp, fmt::format("hidden={} is not a multiple of the FP8 group size {} (q and scales given)",
                                      a.hidden, kFp8QuantGroupSize));
    }
    detail::require_quantised_outputs(kOp, a.m, a.hidden, false, 0);
  }
}

bool vector_aligned(DevicePtr p) { return p.address % 16 == 0; }

}  // namespace

void validate_fused_add_rmsnorm_args(const FusedAddRmsnormArgs& args) {
  check_tensors(args);
  check_shape(args);
}

double fused_add_rmsnorm_floor_bytes(std::uint32_t m, std::uint32_t hidden, bool quantised) {
  const auto mf = static_cast<double>(m);
  const auto hf = static_cast<double>(hidden);
  const double bf16 = mf * hf * 2 * 4 + hf * 2;  // x, residual, y, residual_out; weight once
  return quantised ? bf16 + mf * hf + mf * static_cast<double>(hidden / kFp8QuantGroupSize) * 4 : bf16;
}

std::optional<KernelParamsProblem> check_fused_add_rmsnorm(const KernelParams& p) {
  if (p.block < kWarp || p.block > kMaxBlock || p.block % kWarp != 0) {
    return KernelParamsProblem{"block",
                               fmt::format("block = {}: must be whole warps in [{}, {}]", p.block, kWarp, kMaxBlock)};
  }
  if (p.lanes != 0 || p.groups != 0) {
    return KernelParamsProblem{"lanes", "the kernel takes only a block"};
  }
  return std::nullopt;
}

void launch_fused_add_rmsnorm(GpuBackend& gpu, KernelHandle kernel, std::string_view kernel_name,
                              const KernelParams& params, const FusedAddRmsnormArgs& args, std::uint64_t stream) {
  validate_fused_add_rmsnorm_args(args);
  if (auto violation = kernel_params_violation(kernel_name, params)) {
    detail::argument_error(kOp, fmt::format("{} variant {}: {}", kernel_name, params.tag(), *violation));
  }
  KernelLaunch(gpu, kernel)
      .grid(Dim3{args.m, 1, 1})
      .block(Dim3{params.block, 1, 1})
      .arg_ptr(args.x)
      .arg_ptr(args.residual)
      .arg_ptr(args.weight)
      .arg_ptr(args.y)
      .arg_ptr(args.residual_out)
      .arg_ptr(args.q)
      .arg_ptr(args.scales)
      .arg_u32(args.m)
      .arg_u32(args.hidden)
      .arg_u32(args.x_row_stride)
      .arg_u32(args.residual_row_stride)
      .arg_f32(args.eps)
      .arg_u32(args.pow2_scale ? 1U : 0U)
      .launch(stream);
}

std::optional<std::string_view> fused_add_rmsnorm_vec_reject(bool requested, bool twin_present, bool parent_present,
                                                             const FusedAddRmsnormArgs& a) {
  const bool aligned = vector_aligned(a.x) && vector_aligned(a.residual) && vector_aligned(a.weight) &&
                       vector_aligned(a.y) && vector_aligned(a.residual_out);
  return first_failed(
      {{kRmsnormRejects[1], twin_present},
       {kRmsnormRejects[0], !parent_present || requested},
       {kRmsnormRejects[2], a.hidden % kVectorElements == 0},
       {kRmsnormRejects[3], a.x_row_stride % kVectorElements == 0 && a.residual_row_stride % kVectorElements == 0},
       {kRmsnormRejects[4], aligned}});
}

const GuardTable& rmsnorm_guard() { return guard_table_of<kRmsnormRejects>(); }

std::optional<std::string> rmsnorm_log_line(const RmsnormPick& pick, const FusedAddRmsnormArgs& args, OnceSlots& said) {
  if (!rmsnorm_guard().claim(pick.reject, pick.requested, said)) {
    return std::nullopt;
  }
  if (pick.reject) {
    return fmt::format(
        "fused add-RMSNorm: the vectorised twin is NOT running at M={} hidden={}: {} (METRALE_FUSED_ADD_RMSNORM_VEC)",
        args.m, args.hidden, *pick.reject);
  }
  return fmt::format("fused add-RMSNorm: {} (METRALE_FUSED_ADD_RMSNORM_VEC) M={} hidden={}", kRmsnormTwinKernel, args.m,
                     args.hidden);
}

RmsnormPick fused_add_rmsnorm_pick(bool requested, const RmsnormKernels& kernels, const FusedAddRmsnormArgs& args) {
  RmsnormPick pick;
  pick.requested = requested;
  pick.reject = fused_add_rmsnorm_vec_reject(requested, kernels.twin.present(), kernels.parent.present(), args);
  pick.twin = !pick.reject.has_value();
  return pick;
}

RmsnormPick fused_add_rmsnorm(GpuBackend& gpu, const RmsnormKernels& kernels, bool requested,
                              const FusedAddRmsnormArgs& args, std::uint64_t stream) {
  validate_fused_add_rmsnorm_args(args);
  const RmsnormPick pick = fused_add_rmsnorm_pick(requested, kernels, args);
  log_verdict_line(rmsnorm_log_line(pick, args, rmsnorm_guard().process_slots()));
  if (pick.twin) {
    launch_fused_add_rmsnorm(gpu, kernels.twin, kRmsnormTwinKernel, kernels.twin_params, args, stream);
  } else if (kernels.parent.present()) {
    launch_fused_add_rmsnorm(gpu, kernels.parent, kRmsnormParentKernel, kernels.parent_params, args, stream);
  } else {
    throw BackendError(fmt::format("{}: no kernel to run: {} is absent and {} cannot run ({})", kOp,
                                   kRmsnormParentKernel, kRmsnormTwinKernel, pick.reject.value_or("")));
  }
  return pick;
}

}  // namespace metrale::ops
