// silu_mul_fp8_quant_op.cpp: the fused SiLU-and-mul FP8 quant op as data
// (ops/op_declaration.hpp): its three kernels by role (the parent's two steps, "parent" and
// "quant", and the fused "twin"), its lever, its arguments, its call and its explanation, and
// its two kernels' catalog declarations and the parent step's parameter rule. The
// third op of the library, declared without a line in the runtime, the C ABI, the bindings or
// the CLI.
// Invariants: a forced role runs through the op's own pick with the other path blanked, so the
// grids are the op's; the parent's bf16 scratch is the caller's `scratch` when given; without
// one the op allocates it, runs, waits for the stream and frees it (a synchronous call: pass a
// scratch of M x K bf16 for an asynchronous one, and inside a graph capture).
#include <fmt/format.h>

#include <array>

#include "metrale/error.hpp"
#include "metrale/ops/op_declaration.hpp"
#include "ops/core/library_ops.hpp"
#include "ops/op_arg_fields.hpp"
#include "ops/op_explain_twin.hpp"
#include "ops/op_kernel_rules.hpp"
#include "ops/op_kernels.hpp"
#include "ops/op_positions.hpp"
#include "ops/op_twin_call.hpp"
#include "ops/op_verdict.hpp"
#include "ops/silu_mul_fp8_quant/silu_mul_fp8_quant.hpp"

namespace metrale::ops {
namespace {

constexpr std::string_view kQuantRole = "quant";
constexpr std::size_t kQuantAt = 1;  // between the parent and the twin
constexpr TwinOverParent kNames{.op = "silu_mul_fp8_quant",
                                .parent_kernel = kSiluMulParentKernel,
                                .twin_kernel = kSiluMulTwinKernel,
                                .twin_lever = "silu_mul_fp8_quant_fused",
                                .twin_at = 2};

// The declaration's arguments in order (op_arg_fields.hpp; require_arg_fields checks the list against it);
// the scratch is the call's own (run_with_scratch), read at kScratchAt.
using A = SiluMulFp8QuantArgs;
using Fields = ArgFields<A, &A::gate, &A::up, &A::q, &A::scales, kNotInArgs, &A::m, &A::k, &A::gate_row_stride,
                         &A::up_row_stride, &A::scale_layout, &A::m_aligned, &A::scale_kind>;
constexpr std::size_t kScratchAt = 4;

// What a 0 stands for where the declaration says so (its zero_means; require_arg_fields compares them).
using Defaults = ZeroMeansList<Fields, ZeroMeans<&A::gate_row_stride, &A::k>, ZeroMeans<&A::up_row_stride, &A::k>>;

SiluMulFp8QuantArgs unpack(OpArgValues values) {
  SiluMulFp8QuantArgs args = Fields::read(values);
  Defaults::apply(args);
  return args;
}

SiluMulFp8QuantKernels kernels_of(const OpContext& context, bool for_explain) {
  const SiluMulFp8QuantKernels defaults;
  const auto handle = [&](const OpKernel& kernel) {
    return for_explain ? context.handle_or_shipped(kernel) : kernel.handle;
  };
  const OpKernel& silu = context.kernels[kNames.parent_at];
  const OpKernel& quant = context.kernels[kQuantAt];
  const OpKernel& twin = context.kernels[kNames.twin_at];
  SiluMulFp8QuantKernels kernels;
  kernels.silu_mul = handle(silu);
  kernels.quant = handle(quant);
  kernels.twin = handle(twin);
  kernels.silu_mul_params = silu.shipped ? silu.params : defaults.silu_mul_params;
  kernels.quant_params = quant.shipped ? quant.params : defaults.quant_params;
  kernels.twin_params = twin.shipped ? twin.params : defaults.twin_params;
  kernels.fallback_sm_count = context.fallback_sm_count;
  return kernels;
}

// The parent needs a scratch; a caller who gave none gets one for the call's duration.
SiluMulFp8QuantPick run_with_scratch(GpuBackend& gpu, const SiluMulFp8QuantKernels& kernels, bool requested,
                                     const SiluMulFp8QuantArgs& args, DevicePtr scratch, std::uint64_t stream) {
  validate_silu_mul_fp8_quant_args(args);
  const SiluMulFp8QuantPick pick =
      silu_mul_fp8_quant_pick(requested, kernels, args.m, args.k, device_sm_count(gpu, kernels.fallback_sm_count));
  if (pick.twin || scratch.address != 0) {
    return silu_mul_fp8_quant(gpu, kernels, requested, args, scratch, stream);
  }
  const DevicePtr owned = gpu.alloc(silu_mul_scratch_bytes(args.m, args.k));
  try {
    const SiluMulFp8QuantPick ran = silu_mul_fp8_quant(gpu, kernels, requested, args, owned, stream);
    gpu.synchronize(stream);
    gpu.free(owned);
    return ran;
  } catch (...) {
    gpu.free(owned);
    throw;
  }
}

Pick run(const OpContext& context, const OpCall& call) {
  GpuBackend& gpu = context.device();
  const SiluMulFp8QuantArgs args = unpack(call.args);
  const DevicePtr scratch{call.args[kScratchAt]};
  SiluMulFp8QuantKernels kernels = kernels_of(context, false);
  kernels.twin_tuned_min_m = tuned_threshold(context, kNames.twin_role, 0, args.k);
  const bool requested =
      twin_requested(context, kNames, call.forced_role, kernels.parent_present(), kernels.silu_mul, kernels.twin);
  const bool forced = !call.forced_role.empty();
  const SiluMulFp8QuantPick typed = run_with_scratch(gpu, kernels, requested, args, scratch, call.stream);
  return twin_over_parent_pick(kNames, typed.twin, typed.twin ? kernels.twin : kernels.silu_mul, typed.reject, forced);
}

Explanation explain(const OpContext& context, const ExplainQuery& query) {
  const SiluMulFp8QuantArgs shape = unpack(query.args);
  return explain_tuned_twin(context, query, kNames, kernels_of(context, true), shape.m, shape.k, silu_mul_fused_min_m,
                            silu_mul_fp8_quant_pick);
}

}  // namespace

OpDeclaration silu_mul_fp8_quant_declaration() {
  OpDeclaration op;
  op.aliases = {"silu-mul-fp8-quant"};
  op.summary = "per-token-group FP8 e4m3 quantisation of bf16(silu(gate) * up) (the down projection's input)";
  // Optional in a file: HARDWARE.toml files written before this op stay valid (off when absent).
  declare_twin_over_parent(
      op, kNames,
      {.parent_aliases = {"unfused"},
       .parent_doc = "h = bf16(silu(gate) * up) into a scratch, then the quant step",
       .twin_aliases = {"fused"},
       .twin_doc = "one fused kernel, the same bytes",
       .between = {RoleDecl{
           std::string(kQuantRole), std::string(kFp8QuantSharedKernel), {}, "the parent's quant step", ""}},
       .twin_reasons = silu_mul_guard().declared_reasons(),
       .tuned_reason = std::string(kSiluMulTooFewCtas),
       .lever_env = "METRALE_SILU_MUL_FP8_QUANT_FUSED",
       .lever_doc = "the fused twin"});
  require_role_at(op, kQuantAt, kQuantRole);
  op.args = {
      tensor_arg("gate", ArgKind::kInput, DType::kBf16, 16, {"m", "gate_row_stride"}, "gate rows"),
      tensor_arg("up", ArgKind::kInput, DType::kBf16, 16, {"m", "up_row_stride"}, "up rows"),
      tensor_arg("q", ArgKind::kOutput, DType::kE4m3, 8, {"m", "k"}, "e4m3fn codes"),
      tensor_arg("scales", ArgKind::kOutput, DType::kFp32, 4, {"m", "k/128"},
                 "[m][k/128], or column-major with m_aligned")
          .with_column_major("scale_layout", "m_aligned"),
      tensor_arg("scratch", ArgKind::kOutput, DType::kBf16, 16, {"m", "k"},
                 "the parent's h (optional: 0 allocates one per call, synchronously)")
          .as_optional(),
      scalar_arg("m", std::nullopt, UINT32_MAX, "tokens"),
      scalar_arg("k", std::nullopt, UINT32_MAX, "row length, a multiple of 128"),
      scalar_arg("gate_row_stride", 0, UINT32_MAX, "gate's row stride in elements (0: k)").with_zero_means("k"),
      scalar_arg("up_row_stride", 0, UINT32_MAX, "up's row stride in elements (0: k)").with_zero_means("k"),
      scalar_arg("scale_layout", 0, 1, "0 row-major, 1 column-major"),
      scalar_arg("m_aligned", 0, UINT32_MAX, "column-major scales' row count (a multiple of 4, >= m)")
          .with_multiple_of(4),
      scalar_arg("pow2_scales", 0, 1, "1: power-of-two (UE8M0) scales"),
  };
  require_arg_fields(op, Fields::kinds, Defaults::places);
  require_arg_at(op, kScratchAt, "scratch");
  op.run = run;
  op.explain = explain;
  op.shape_rules = [](OpArgValues values) { validate_silu_mul_fp8_quant_args(unpack(values)); };  // run's own
  op.profile = silu_mul_fp8_quant_profile();  // silu_mul_fp8_quant_check.cpp
  op.check = silu_mul_fp8_quant_check;        // silu_mul_fp8_quant_check.cpp
  return op;
}

void require_silu_mul_fp8_quant_tensors(const SiluMulFp8QuantArgs& args) {
  Fields::require_library_tensors(kNames.op, args);
}

// ---- The SiLU-and-mul FP8 quant op's two kernel declarations and the
// parent step's parameter rule.
// Why the twin takes the FP8 twin's rule: it is the FP8 twin's group layout (a team of 16, 8 or 4
// lanes per 128-element group, GROUPS groups per CTA) with a different load.
namespace {

constexpr std::uint32_t kWarp = 32;

}  // namespace

std::optional<KernelParamsProblem> check_silu_mul_bf16(const KernelParams& p) {
  if (p.block < kWarp || p.block > kMaxBlock || p.block % kWarp != 0) {
    return KernelParamsProblem{"block",
                               fmt::format("block = {}: must be whole warps in [{}, {}]", p.block, kWarp, kMaxBlock)};
  }
  return std::nullopt;
}

void add_silu_mul_fp8_quant_kernels(KernelCatalog& catalog) {
  catalog.add({.kernel = std::string(kSiluMulParentKernel),
               .source = std::string(kSiluMulTemplateFile),
               .expression = fmt::format("{}<{{block}}>", kSiluMulParentTemplate),
               .params = {"block"},
               .twin_of = {},  // not a twin: the first of the parent's two launches
               .same_shape = false,
               .background = false,
               .rule = check_silu_mul_bf16});
  // The group max is exact in any order, so the twin may split a group as the FP8 twin does.
  catalog.add({.kernel = std::string(kSiluMulTwinKernel),
               .source = std::string(kSiluMulTemplateFile),
               .expression = fmt::format("{}<{{lanes}}, {{groups}}>", kSiluMulTwinTemplate),
               .params = {"lanes", "groups"},
               .twin_of = std::string(kSiluMulParentKernel),
               .same_shape = false,
               .background = true,
               .rule = check_fp8_act_quant_hopper});
}

}  // namespace metrale::ops
