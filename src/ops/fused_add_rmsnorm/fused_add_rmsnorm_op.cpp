// ops/fused_add_rmsnorm/fused_add_rmsnorm_op.cpp: the fused residual-add + RMSNorm op as data
// (ops/op_declaration.hpp): its two kernels by role (parent, twin), its lever, its arguments
// (residual_out declared in place of residual, q and scales optional), its call and its
// explanation, and its kernels' catalog declarations. The fourth op of the library.
// Invariants: a forced role runs through the op's own pick with the other kernel blanked, so the
// twin forced at a shape its guard refuses is a BackendError naming the guard's reason; explain
// answers with the guard the call runs (the twin has no M floor: min M 1).
#include <fmt/format.h>

#include "metrale/error.hpp"
#include "metrale/ops/op_declaration.hpp"
#include "ops/fused_add_rmsnorm/fused_add_rmsnorm.hpp"
#include "ops/op_arg_fields.hpp"
#include "ops/op_explain_twin.hpp"
#include "ops/op_positions.hpp"
#include "ops/op_twin_call.hpp"

namespace metrale::ops {
namespace {

constexpr TwinOverParent kNames{.op = "fused_add_rmsnorm",
                                .parent_kernel = kRmsnormParentKernel,
                                .twin_kernel = kRmsnormTwinKernel,
                                .twin_lever = "fused_add_rmsnorm_vec"};

// The declaration's arguments in order (op_arg_fields.hpp; require_arg_fields checks the list against it).
using A = FusedAddRmsnormArgs;
using Fields = ArgFields<A, &A::x, &A::residual, &A::weight, &A::y, &A::residual_out, &A::q, &A::scales, &A::m,
                         &A::hidden, &A::x_row_stride, &A::residual_row_stride, &A::eps, &A::pow2_scale>;

// What a 0 stands for where the declaration says so (its zero_means; require_arg_fields compares them).
using Defaults =
    ZeroMeansList<Fields, ZeroMeans<&A::x_row_stride, &A::hidden>, ZeroMeans<&A::residual_row_stride, &A::hidden>>;

FusedAddRmsnormArgs unpack(OpArgValues values) {
  FusedAddRmsnormArgs args = Fields::read(values);
  Defaults::apply(args);
  return args;
}

RmsnormKernels kernels_of(const OpContext& context, bool for_explain) {
  const auto handle = [&](const OpKernel& kernel) {
    return for_explain ? context.handle_or_shipped(kernel) : kernel.handle;
  };
  const OpKernel& parent = context.kernels[kNames.parent_at];
  const OpKernel& twin = context.kernels[kNames.twin_at];
  RmsnormKernels kernels;
  kernels.parent = handle(parent);
  kernels.twin = handle(twin);
  if (parent.shipped) {
    kernels.parent_params = parent.params;
  }
  if (twin.shipped) {
    kernels.twin_params = twin.params;
  }
  return kernels;
}

Pick run(const OpContext& context, const OpCall& call) {
  GpuBackend& gpu = context.device();
  const FusedAddRmsnormArgs args = unpack(call.args);
  RmsnormKernels kernels = kernels_of(context, false);
  const bool requested =
      twin_requested(context, kNames, call.forced_role, kernels.parent.present(), kernels.parent, kernels.twin);
  const bool forced = !call.forced_role.empty();
  const RmsnormPick typed = fused_add_rmsnorm(gpu, kernels, requested, args, call.stream);
  return twin_over_parent_pick(kNames, typed.twin, typed.twin ? kernels.twin : kernels.parent, typed.reject, forced);
}

Explanation explain(const OpContext& context, const ExplainQuery& query) {
  const FusedAddRmsnormArgs shape = unpack(query.args);
  const RmsnormKernels kernels = kernels_of(context, true);
  const TwinExplainSpec spec{.names = kNames, .min_m = 1, .reject_at = [&](bool requested, std::uint32_t m) {
                               FusedAddRmsnormArgs at = shape;
                               at.m = m;
                               return fused_add_rmsnorm_pick(requested, kernels, at).reject;
                             }};
  return explain_twin_over_parent(context, query, shape.m, spec);
}

}  // namespace

OpDeclaration fused_add_rmsnorm_declaration() {
  OpDeclaration op;
  op.aliases = {"fused-add-rmsnorm"};
  op.summary =
      "residual_out = bf16(x + residual), y = bf16(residual_out * rsqrt(mean(residual_out^2) + eps) * weight), "
      "optionally FP8 e4m3 per-token-group q, scales of y";
  declare_twin_over_parent(op, kNames,
                           {.parent_doc = "one CTA per row, 2-byte loads",
                            .twin_aliases = {"vec"},
                            .twin_doc = "16-byte loads, the same bytes",
                            .twin_reasons = rmsnorm_guard().declared_reasons(),
                            .tuned_reason = "",  // no M threshold
                            .lever_env = "METRALE_FUSED_ADD_RMSNORM_VEC",
                            .lever_doc = "the vectorised twin"});
  op.args = {
      tensor_arg("x", ArgKind::kInput, DType::kBf16, 2, {"m", "x_row_stride"}, "the layer's output rows"),
      tensor_arg("residual", ArgKind::kInput, DType::kBf16, 2, {"m", "residual_row_stride"}, "the residual rows"),
      tensor_arg("weight", ArgKind::kInput, DType::kBf16, 2, {"hidden"}, "the RMSNorm weight"),
      tensor_arg("y", ArgKind::kOutput, DType::kBf16, 2, {"m", "hidden"}, "the normalised rows"),
      tensor_arg("residual_out", ArgKind::kOutput, DType::kBf16, 2, {"m", "residual_row_stride"},
                 "x + residual (may be residual itself: vLLM updates it in place)")
          .with_in_place_of("residual"),
      tensor_arg("q", ArgKind::kOutput, DType::kE4m3, 8, {"m", "hidden"}, "FP8 codes of y (optional)").as_optional(),
      tensor_arg("scales", ArgKind::kOutput, DType::kFp32, 4, {"m", "hidden/128"},
                 "[m][hidden/128] fp32 scales (with q)")
          .as_optional(),
      scalar_arg("m", std::nullopt, UINT32_MAX, "tokens"),
      scalar_arg("hidden", std::nullopt, UINT32_MAX, "row length (5120 for Qwen3.5-27B)"),
      scalar_arg("x_row_stride", 0, UINT32_MAX, "x's row stride in elements (0: hidden)").with_zero_means("hidden"),
      scalar_arg("residual_row_stride", 0, UINT32_MAX, "residual's and residual_out's row stride (0: hidden)")
          .with_zero_means("hidden"),
      scalar_arg("eps_bits", kRmsnormEpsBits, UINT32_MAX, "epsilon as IEEE float32 bits (default 1e-6)"),
      scalar_arg("pow2_scales", 0, 1, "1: power-of-two (UE8M0) scales"),
  };
  require_arg_fields(op, Fields::kinds, Defaults::places);
  op.run = run;
  op.explain = explain;
  op.shape_rules = [](OpArgValues values) { validate_fused_add_rmsnorm_args(unpack(values)); };
  op.profile = fused_add_rmsnorm_profile();  // fused_add_rmsnorm_check.cpp
  op.check = fused_add_rmsnorm_check;
  return op;
}

void require_fused_add_rmsnorm_tensors(const FusedAddRmsnormArgs& args) {
  Fields::require_library_tensors(kNames.op, args);
}

void add_fused_add_rmsnorm_kernels(KernelCatalog& catalog) {
  catalog.add({.kernel = std::string(kRmsnormParentKernel),
               .source = std::string(kRmsnormTemplateFile),
               .expression = fmt::format("{}<{{block}}>", kRmsnormParentTemplate),
               .params = {"block"},
               .twin_of = {},
               .same_shape = false,
               .background = false,
               .rule = check_fused_add_rmsnorm});
  // same_shape: the reduction tree is a function of BLOCK, so the twin's block must be the parent's.
  catalog.add({.kernel = std::string(kRmsnormTwinKernel),
               .source = std::string(kRmsnormTemplateFile),
               .expression = fmt::format("{}<{{block}}>", kRmsnormTwinTemplate),
               .params = {"block"},
               .twin_of = std::string(kRmsnormParentKernel),
               .same_shape = true,
               .background = true,
               .rule = check_fused_add_rmsnorm});
}

}  // namespace metrale::ops
