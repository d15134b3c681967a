// fp8_act_quant_op.cpp: the FP8 activation-quant op as data (ops/op_declaration.hpp): its two
// kernels by role, its lever, its arguments, its call and its explanation; the typed entry
// ops::fp8_act_quant(host, args, ...) lands here too; and the two kernels' parameter rules and
// catalog declarations.
// Invariants: one code path for the declaration's run and the typed entry (run_typed); a forced
// role runs through the op's own pick with the other kernel blanked, so the grid and block
// launched are the op's.
#include <fmt/format.h>

#include <array>
#include <span>

#include "metrale/error.hpp"
#include "metrale/ops/fp8_act_quant.hpp"
#include "metrale/ops/op_declaration.hpp"
#include "ops/core/library_ops.hpp"
#include "ops/fp8_act_quant/fp8_act_quant.hpp"
#include "ops/op_arg_fields.hpp"
#include "ops/op_explain_twin.hpp"
#include "ops/op_kernel_rules.hpp"
#include "ops/op_kernels.hpp"
#include "ops/op_positions.hpp"
#include "ops/op_twin_call.hpp"
#include "ops/op_verdict.hpp"

namespace metrale::ops {
namespace {

constexpr TwinOverParent kNames{.op = "fp8_act_quant",
                                .parent_kernel = kFp8QuantSharedKernel,
                                .twin_kernel = kFp8QuantTwinKernel,
                                .twin_lever = "fp8_act_quant_hopper"};

// The declaration's arguments in order (op_arg_fields.hpp; require_arg_fields checks the list against it).
using A = Fp8QuantArgs;
using Fields = ArgFields<A, &A::x, &A::q, &A::scales, &A::m, &A::k, &A::x_row_stride, &A::scale_layout, &A::m_aligned,
                         &A::scale_kind>;

// What a 0 stands for where the declaration says so (its zero_means; require_arg_fields compares them).
using Defaults = ZeroMeansList<Fields, ZeroMeans<&A::x_row_stride, &A::k>>;

Fp8QuantArgs unpack(OpArgValues values) {
  Fp8QuantArgs args = Fields::read(values);
  Defaults::apply(args);
  return args;
}

Fp8QuantKernels kernels_of(const OpContext& context, bool for_explain) {
  const Fp8QuantKernels defaults;
  const OpKernel& shared = context.kernels[kNames.parent_at];
  const OpKernel& twin = context.kernels[kNames.twin_at];
  Fp8QuantKernels kernels;
  kernels.shared = for_explain ? context.handle_or_shipped(shared) : shared.handle;
  kernels.twin = for_explain ? context.handle_or_shipped(twin) : twin.handle;
  kernels.shared_params = shared.shipped ? shared.params : defaults.shared_params;
  kernels.twin_params = twin.shipped ? twin.params : defaults.twin_params;
  kernels.fallback_sm_count = context.fallback_sm_count;
  return kernels;
}

Fp8QuantPick run_typed(const OpContext& context, const Fp8QuantArgs& args, std::uint64_t stream,
                       std::string_view forced_role) {
  GpuBackend& gpu = context.device();
  Fp8QuantKernels kernels = kernels_of(context, false);
  kernels.twin_tuned_min_m = tuned_threshold(context, kNames.twin_role, 0, args.k);
  const bool twin =
      twin_requested(context, kNames, forced_role, kernels.shared.present(), kernels.shared, kernels.twin);
  Fp8QuantPick pick = fp8_act_quant(gpu, kernels, twin, args, stream);
  if (!forced_role.empty() && !twin) {
    pick.reject = kForcedKernelReason;
  }
  return pick;
}

Pick generic_pick(const Fp8QuantPick& typed, bool forced) {
  return twin_over_parent_pick(kNames, typed.twin, typed.kernel, typed.reject, forced);
}

Explanation explain(const OpContext& context, const ExplainQuery& query) {
  const Fp8QuantArgs shape = unpack(query.args);
  return explain_tuned_twin(context, query, kNames, kernels_of(context, true), shape.m, shape.k, fp8_quant_hopper_min_m,
                            fp8_quant_pick);
}

}  // namespace

Fp8QuantPick fp8_act_quant(const OpHost& host, const Fp8QuantArgs& args, std::uint64_t stream, std::string_view role) {
  Fp8QuantPick pick;
  auto call = [&] {
    const OpContext named = host.op_context(kNames.op);
    const std::string_view forced = resolve_role(*named.op, role, ": only the BA-gates op has a tensor-core kernel");
    const std::array<std::uint64_t, kMaxArgs> values = Fields::write(args);
    check_no_aliasing(*named.op, std::span(values).first(named.op->args.size()));
    pick = run_typed(host.call_context(kNames.op, stream, forced), args, stream, forced);
  };
  host.while_held(HeldCall(call));
  return pick;
}

Fp8QuantKernels fp8_quant_kernels(const OpHost& host) { return kernels_of(host.op_context(kNames.op), false); }

Pick to_pick(const Fp8QuantPick& pick, bool forced) { return generic_pick(pick, forced); }

OpDeclaration fp8_act_quant_declaration() {
  OpDeclaration op;
  op.aliases = {"fp8-quant"};
  op.summary = "per-token-group FP8 e4m3 activation quantisation (groups of 128, fp32 or UE8M0 scales)";
  declare_twin_over_parent(op, kNames,
                           {.parent_aliases = {"shared"},
                            .parent_doc = "one CTA per group",
                            .twin_doc = "8 groups per CTA, the same bytes",
                            .twin_reasons = fp8_quant_guard().declared_reasons(),
                            .tuned_reason = std::string(kFp8QuantTooFewCtas),
                            .lever_env = "METRALE_FP8_ACT_QUANT_HOPPER",
                            .lever_required_in_file = true,
                            .lever_doc = "the Hopper twin"});
  op.args = {
      tensor_arg("x", ArgKind::kInput, DType::kBf16, 16, {"m", "x_row_stride"}, "activations, rows of x_row_stride"),
      tensor_arg("q", ArgKind::kOutput, DType::kE4m3, 8, {"m", "k"}, "e4m3fn codes"),
      tensor_arg("scales", ArgKind::kOutput, DType::kFp32, 4, {"m", "k/128"},
                 "[m][k/128] (row-major); column-major: [k/128][m_aligned]")
          .with_column_major("scale_layout", "m_aligned"),
      scalar_arg("m", std::nullopt, UINT32_MAX, "tokens"),
      scalar_arg("k", std::nullopt, UINT32_MAX, "row length, a multiple of 128"),
      scalar_arg("x_row_stride", 0, UINT32_MAX, "x's row stride in elements (0: k)").with_zero_means("k"),
      scalar_arg("scale_layout", 0, 1, "0 row-major, 1 column-major"),
      scalar_arg("m_aligned", 0, UINT32_MAX, "column-major scales' row count (a multiple of 4, >= m)")
          .with_multiple_of(4),
      scalar_arg("pow2_scales", 0, 1, "1: power-of-two (UE8M0) scales"),
  };
  op.run = [](const OpContext& context, const OpCall& call) {
    return generic_pick(run_typed(context, unpack(call.args), call.stream, call.forced_role),
                        !call.forced_role.empty());
  };
  op.explain = explain;
  op.shape_rules = [](OpArgValues values) { validate_fp8_quant_args(unpack(values)); };  // run's own
  op.profile = fp8_act_quant_profile();                                                  // fp8_act_quant_check.cpp
  op.check = fp8_act_quant_check;                                                        // fp8_act_quant_check.cpp
  require_arg_fields(op, Fields::kinds, Defaults::places);
  return op;
}

void require_fp8_act_quant_tensors(const Fp8QuantArgs& args) { Fields::require_library_tensors(kNames.op, args); }

// ---- The kernels' parameter rules and their catalog declarations (ops/op_kernels.cpp adds them
// through the list in ops/core/library_ops.cpp).
// Why these rules: fp8_act_quant gives each team of 16, 8 or 4 lanes one 128-element group (each
// lane 8, 16 or 32 bf16), and the block is lanes * groups, never set on its own.
namespace {

constexpr std::uint32_t kQuantLanes = 16;
constexpr std::uint32_t kQuantMaxGroups = 32;

}  // namespace

namespace {

std::optional<KernelParamsProblem> check_quant_lanes(const KernelParams& p) {
  if (p.lanes != kQuantLanes && p.lanes != kQuantLanes / 2 && p.lanes != kQuantLanes / 4) {
    return problem("lanes", fmt::format("lanes = {}: must be 16, 8 or 4 (a 128-element group is 16 lanes x 8 bf16, "
                                        "8 x 16 or 4 x 32)",
                                        p.lanes));
  }
  if (p.block != 0) {
    return problem("block", fmt::format("block = {}: must be absent (the block is lanes x groups)", p.block));
  }
  return std::nullopt;
}
}  // namespace

std::optional<KernelParamsProblem> check_fp8_act_quant(const KernelParams& p) {
  if (auto lanes = check_quant_lanes(p)) {
    return lanes;
  }
  if (p.groups != 1) {
    return problem("groups", fmt::format("groups = {}: must be 1 (one group per CTA)", p.groups));
  }
  return std::nullopt;
}

std::optional<KernelParamsProblem> check_fp8_act_quant_hopper(const KernelParams& p) {
  if (auto lanes = check_quant_lanes(p)) {
    return lanes;
  }
  if (p.groups < 1 || p.groups > kQuantMaxGroups || p.lanes * p.groups > kMaxBlock) {
    return problem("groups", fmt::format("groups = {}: must be in [1, {}] with lanes x groups <= {}", p.groups,
                                         kQuantMaxGroups, kMaxBlock));
  }
  return std::nullopt;
}

void add_fp8_act_quant_kernels(KernelCatalog& catalog) {
  catalog.add({.kernel = std::string(kFp8QuantSharedKernel),
               .source = std::string(kFp8QuantTemplateFile),
               .expression = fmt::format("{}<{{lanes}}, {{groups}}>", kFp8QuantSharedTemplate),
               .params = {"lanes", "groups"},
               .twin_of = {},  // not a twin
               .same_shape = false,
               .background = false,
               .rule = check_fp8_act_quant});
  // The FP8 group max is exact in any order, so its twin may split a group differently.
  catalog.add({.kernel = std::string(kFp8QuantTwinKernel),
               .source = std::string(kFp8QuantTemplateFile),
               .expression = fmt::format("{}<{{lanes}}, {{groups}}>", kFp8QuantTwinTemplate),
               .params = {"lanes", "groups"},
               .twin_of = std::string(kFp8QuantSharedKernel),
               .same_shape = false,
               .background = true,
               .rule = check_fp8_act_quant_hopper});
}

}  // namespace metrale::ops
