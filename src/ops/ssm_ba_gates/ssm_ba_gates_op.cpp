// ssm_ba_gates_op.cpp: the BA-gates op as data (ops/op_declaration.hpp): its four kernels by
// role, its three levers, its arguments, its call (the guards of ssm_ba_gates.cpp, or a forced
// role) and its explanation. The typed entry ops::ssm_ba_gates(host, args, ...) lands here too.
// And the four kernels' catalog declarations (their parameter rules stand beside their launchers:
// ssm_ba_gates.cpp, ssm_ba_gates_mma.cpp, ssm_ba_gates_splitk.cpp).
// Invariants: the declaration's run and the typed entry are one code path (run_typed); a forced
// role is checked built before anything launches and keeps the op's validation.
#include <fmt/format.h>

#include <algorithm>

#include "metrale/error.hpp"
#include "metrale/ops/op_declaration.hpp"
#include "metrale/ops/ssm_ba_gates.hpp"
#include "ops/core/library_ops.hpp"
#include "ops/op_arg_fields.hpp"
#include "ops/op_kernel_rules.hpp"
#include "ops/op_kernels.hpp"
#include "ops/op_positions.hpp"
#include "ops/op_verdict.hpp"
#include "ops/ssm_ba_gates/ssm_ba_gates.hpp"

namespace metrale::ops {
namespace {

constexpr std::string_view kOpName = "ssm_ba_gates";
constexpr std::string_view kTwinLever = "ssm_ba_gates_hopper";
constexpr std::string_view kTensorCoreLever = "ssm_ba_gates_tensor_core";
constexpr std::string_view kDecodeLever = "ssm_ba_gates_decode";
// The declaration's role and lever positions, which the per-call path reads the kernels and
// levers at (ops/op_positions.hpp; checked against these names when the declaration is built).
enum RoleAt : std::size_t { kParentAt, kTwinAt, kTensorCoreAt, kDecodeAt };
enum LeverAt : std::size_t { kTwinLeverAt, kTensorCoreLeverAt, kDecodeLeverAt };
constexpr std::array<std::string_view, 4> kRolesInOrder = {kBaGatesParentRole, kBaGatesTwinRole, kBaGatesTensorCoreRole,
                                                           kBaGatesDecodeRole};
constexpr std::array<std::string_view, 3> kLeversInOrder = {kTwinLever, kTensorCoreLever, kDecodeLever};

// The declaration's arguments in order (op_arg_fields.hpp; require_arg_fields checks the list against it).
using A = BaGatesArgs;
using Fields = ArgFields<A, &A::x, &A::weight, &A::a_log, &A::dt_bias, &A::gate_out, &A::m, &A::n, &A::k, &A::k_stride,
                         &A::gate_stride, &A::nv, &A::vheads_per_group>;

// What a 0 stands for where the declaration says so (its zero_means; require_arg_fields compares them).
using Defaults = ZeroMeansList<Fields, ZeroMeans<&A::k_stride, &A::k>, ZeroMeans<&A::gate_stride, &A::n>,
                               ZeroMeans<&A::nv, &A::n, 2>>;

BaGatesArgs unpack(OpArgValues values) {
  BaGatesArgs args = Fields::read(values);
  Defaults::apply(args);
  return args;
}

// A role's handle; with no device, a stand-in that is present when the target ships the kernel
// (explain answers for the target then, as the CLI does).

BaGatesKernels kernels_of(const OpContext& context, bool for_explain) {
  const BaGatesKernels defaults;
  const OpKernel& parent = context.kernels[kParentAt];
  const OpKernel& twin = context.kernels[kTwinAt];
  const OpKernel& mma = context.kernels[kTensorCoreAt];
  const OpKernel& splitk = context.kernels[kDecodeAt];
  BaGatesKernels kernels;
  kernels.parent = for_explain ? context.handle_or_shipped(parent) : parent.handle;
  kernels.twin = for_explain ? context.handle_or_shipped(twin) : twin.handle;
  kernels.mma = for_explain ? context.handle_or_shipped(mma) : mma.handle;
  kernels.parent_params = parent.shipped ? parent.params : defaults.parent_params;
  kernels.twin_params = twin.shipped ? twin.params : defaults.twin_params;
  kernels.mma_params = mma.shipped ? mma.params : defaults.mma_params;
  kernels.splitk = for_explain ? context.handle_or_shipped(splitk) : splitk.handle;
  kernels.splitk_params = splitk.shipped ? splitk.params : defaults.splitk_params;
  kernels.fallback_sm_count = context.fallback_sm_count;
  return kernels;
}

// The tuning table's thresholds at the call's (n, k), set in place (the kernels are a call's own
// copy, and copying them again costs the per-call path more than the lookups).
void add_tuning(BaGatesKernels& kernels, const OpContext& context, const BaGatesArgs& shape) {
  kernels.twin_tuned_min_m = tuned_threshold(context, kBaGatesTwinRole, shape.n, shape.k);
  kernels.mma_tuned_min_m = tuned_threshold(context, kBaGatesTensorCoreRole, shape.n, shape.k);
}

KernelHandle require_built(const OpContext& context, KernelHandle handle, std::string_view kernel) {
  if (!handle.present()) {
    throw KernelChoiceError(fmt::format("target {} does not ship {} (or it failed to build)", context.target, kernel));
  }
  return handle;
}

BaGatesPick run_forced(const OpContext& context, const BaGatesArgs& args, std::uint64_t stream, std::string_view role) {
  GpuBackend& gpu = context.device();
  const BaGatesKernels kernels = kernels_of(context, false);
  BaGatesPick pick;
  if (role == kBaGatesTensorCoreRole) {
    pick.kernel = require_built(context, kernels.mma, kBaGatesMmaKernel);
    pick.mma = true;
  } else if (role == kBaGatesDecodeRole) {
    pick.kernel = require_built(context, kernels.splitk, kBaGatesSplitKKernel);
    pick.decode = true;
  } else if (role == kBaGatesTwinRole) {
    pick.kernel = require_built(context, kernels.twin, kBaGatesTwinKernel);
    pick.twin = true;
  } else {
    pick.kernel = require_built(context, kernels.parent, kBaGatesParentKernel);
    pick.reject = kForcedKernelReason;
  }
  validate_ba_gates_args(args);
  if (pick.mma) {
    launch_ba_gates_mma(gpu, pick.kernel, kernels.mma_params, args, stream);
  } else if (pick.decode) {
    launch_ba_gates_splitk(gpu, pick.kernel, kernels.splitk_params, args, stream);
  } else if (pick.twin) {
    launch_ba_gates_twin(gpu, pick.kernel, kernels.twin_params, args, stream);
  } else {
    launch_ba_gates_parent(gpu, pick.kernel, kernels.parent_params, args, stream);
  }
  return pick;
}

BaGatesPick run_typed(const OpContext& context, const BaGatesArgs& args, std::uint64_t stream,
                      std::string_view forced_role) {
  if (!forced_role.empty()) {
    return run_forced(context, args, stream, forced_role);
  }
  const BaGatesLevers levers{lever_at(context, kTwinLeverAt), lever_at(context, kTensorCoreLeverAt),
                             lever_at(context, kDecodeLeverAt)};
  BaGatesKernels kernels = kernels_of(context, false);
  add_tuning(kernels, context, args);
  return ssm_ba_gates(context.device(), kernels, levers, args, stream);
}

Pick generic_pick(const BaGatesPick& typed, bool forced) {
  Pick pick;
  pick.op = kOpName;
  pick.handle = typed.kernel;
  pick.forced = forced;
  pick.role = typed.mma ? kBaGatesTensorCoreRole
                        : (typed.decode ? kBaGatesDecodeRole : (typed.twin ? kBaGatesTwinRole : kBaGatesParentRole));
  pick.kernel = typed.mma
                    ? kBaGatesMmaKernel
                    : (typed.decode ? kBaGatesSplitKKernel : (typed.twin ? kBaGatesTwinKernel : kBaGatesParentKernel));
  if (forced) {
    pick.add_verdict(pick.role, typed.reject);
    return pick;
  }
  pick.add_verdict(kBaGatesTensorCoreRole, typed.mma ? std::nullopt : typed.mma_reject);
  if (!typed.mma) {
    pick.add_verdict(kBaGatesDecodeRole, typed.decode ? std::nullopt : typed.decode_reject);
  }
  if (!typed.mma && !typed.decode) {
    pick.add_verdict(kBaGatesTwinRole, typed.twin ? std::nullopt : typed.reject);
  }
  return pick;
}

// The tensor-core guard's query for a shape: the device's compute capability and shared-memory
// limit (the target's without a device), buffers assumed 16-byte aligned (the op refuses others
// before any guard runs).
BaGatesMmaQuery tensor_core_query(const OpContext& context, const BaGatesKernels& kernels, bool requested,
                                  std::uint32_t sm_count, const BaGatesArgs& shape) {
  BaGatesMmaQuery query;
  query.requested = requested;
  query.kernel_present = kernels.mma.present();
  if (context.gpu != nullptr) {
    set_mma_variant(query, kernels.mma_params, context.gpu->compute_capability(),
                    context.gpu->max_dynamic_shared_bytes());
  } else {
    set_mma_variant(query, kernels.mma_params, context.compute_capability, std::nullopt);
  }
  query.set_shape(shape);
  query.sm_count = sm_count;
  query.tuned_min_m = kernels.mma_tuned_min_m;
  query.twin_tuned_min_m = kernels.twin_tuned_min_m;
  return query;
}

// The decode role's range at a shape: it takes every M from 1 to its token tile, so min_m is 1
// (or never, with the guard's reason at M = 1) and the tile is a detail, with the K split it gets.
void explain_decode_range(RoleExplanation& decode, BaGatesDecodeQuery query) {
  query.m = 1;
  if (const auto never = ssm_ba_gates_decode_reject(query)) {
    decode.min_reason = std::string(*never);
    return;
  }
  decode.min_m = 1;
  const std::uint32_t cluster = ba_gates_splitk_cluster_blocks(
      1, query.n, query.k, query.tokens_per_tile, query.outs_per_block, query.sm_count, query.compute_capability);
  decode.details = {{std::string(kMaxMDetail), ba_gates_decode_max_m(query)},
                    {"outputs_per_cta", query.outs_per_block},
                    {"cluster_blocks", cluster}};
  decode.note =
      fmt::format("M <= {} (one token tile); {} outputs per CTA, K split over {} CTAs (a thread-block cluster)",
                  ba_gates_decode_max_m(query), query.outs_per_block, cluster);
}

Explanation explain(const OpContext& context, const ExplainQuery& query) {
  const BaGatesArgs shape = unpack(query.args);
  BaGatesKernels kernels = kernels_of(context, true);
  add_tuning(kernels, context, shape);
  const std::uint32_t sm_count = context.sm_count();
  RoleExplanation tensor_core = explain_role(context, kBaGatesTensorCoreRole, kTensorCoreLever);
  RoleExplanation twin = explain_role(context, kBaGatesTwinRole, kTwinLever);
  RoleExplanation decode = explain_role(context, kBaGatesDecodeRole, kDecodeLever);
  Explanation out;
  out.op = std::string(kOpName);
  out.target = std::string(context.target);
  out.sm_count = sm_count;
  // The smallest M each guarded role takes at this N and K.
  const std::uint32_t twin_min = ba_gates_twin_floor(sm_count, kernels.twin_tuned_min_m);
  const auto twin_never = ssm_ba_gates_hopper_reject(twin.requested, kernels.twin.present(), twin_min, shape.n, shape.k,
                                                     shape.k_stride, sm_count, kernels.twin_tuned_min_m);
  twin.min_m = twin_never ? std::nullopt : std::optional<std::uint32_t>(twin_min);
  if (twin_never) {
    twin.min_reason = std::string(*twin_never);
  }
  BaGatesMmaQuery at_min = tensor_core_query(context, kernels, tensor_core.requested, sm_count, shape);
  at_min.m = ba_gates_mma_min_m(at_min);
  const auto tc_never = ssm_ba_gates_mma_reject(at_min);
  tensor_core.min_m = tc_never ? std::nullopt : std::optional<std::uint32_t>(at_min.m);
  if (tc_never) {
    tensor_core.min_reason = std::string(*tc_never);
  }
  const std::optional<ComputeCapability> capability =
      context.gpu != nullptr ? context.gpu->compute_capability() : context.compute_capability;
  explain_decode_range(decode, ba_gates_decode_query(kernels.splitk_params, decode.requested, kernels.splitk.present(),
                                                     capability, sm_count, shape));
  if (query.m_given) {
    out.m = shape.m;
    const BaGatesMmaQuery at_m = tensor_core_query(context, kernels, tensor_core.requested, sm_count, shape);
    const BaGatesPick pick = ba_gates_pick_with_decode(
        ba_gates_pick_with_mma(at_m, kernels.mma, twin.requested, kernels.parent, kernels.twin),
        ba_gates_decode_query(kernels.splitk_params, decode.requested, kernels.splitk.present(), capability, sm_count,
                              shape),
        kernels.splitk);
    const Pick generic = generic_pick(pick, false);
    out.kernel = std::string(generic.kernel);
    out.role = std::string(generic.role);
    tensor_core.runs = pick.mma;
    if (pick.mma_reject) {
      tensor_core.reject = std::string(*pick.mma_reject);
    }
    decode.runs = pick.decode;
    if (pick.decode_reject) {
      decode.reject = std::string(*pick.decode_reject);
    }
    twin.runs = pick.twin;
    if (pick.reject && !pick.decode) {
      twin.reject = std::string(*pick.reject);
    }
    const std::uint32_t cluster =
        ba_gates_mma_cluster_blocks(shape.m, at_m.tokens_per_block, shape.k, sm_count, at_m.compute_capability);
    tensor_core.details = {{"tokens_per_tile", at_m.tokens_per_block}, {"cluster_blocks", cluster}};
    tensor_core.note = fmt::format("tiles of {} tokens, each tile's K split over {} CTA{} (a thread-block cluster)",
                                   at_m.tokens_per_block, cluster, cluster == 1 ? "" : "s");
  }
  out.roles = {std::move(tensor_core), std::move(decode), std::move(twin)};
  return out;
}

}  // namespace

BaGatesPick ssm_ba_gates(const OpHost& host, const BaGatesArgs& args, std::uint64_t stream, std::string_view role) {
  BaGatesPick pick;
  auto call = [&] {
    const OpContext named = host.op_context(kOpName);
    const std::string_view forced = resolve_role(*named.op, role);
    const std::array<std::uint64_t, kMaxArgs> values = Fields::write(args);
    const OpArgValues declared = std::span(values).first(named.op->args.size());
    check_no_aliasing(*named.op, declared);
    pick = run_typed(host.call_context_for(kOpName, declared, stream, forced), args, stream, forced);
  };
  host.while_held(HeldCall(call));
  return pick;
}

BaGatesKernels ba_gates_kernels(const OpHost& host) { return kernels_of(host.op_context(kOpName), false); }

Pick to_pick(const BaGatesPick& pick, bool forced) { return generic_pick(pick, forced); }

OpDeclaration ssm_ba_gates_declaration() {
  OpDeclaration op;
  op.name = std::string(kOpName);
  op.aliases = {"ba-gates"};
  op.summary = "Gated DeltaNet BA-gates projection: gate and beta from x . W^T (bf16 in, fp32 out)";
  op.roles = {
      RoleDecl{std::string(kBaGatesParentRole),
               std::string(kBaGatesParentKernel),
               {},
               "one block per token and output group",
               ""},
      RoleDecl{std::string(kBaGatesTwinRole),
               std::string(kBaGatesTwinKernel),
               {},
               "one block per token, the same bytes",
               std::string(kTwinLever)},
      RoleDecl{std::string(kBaGatesTensorCoreRole),
               std::string(kBaGatesMmaKernel),
               {"mma"},
               "bf16 tensor cores, K split over a cluster",
               std::string(kTensorCoreLever)},
      RoleDecl{std::string(kBaGatesDecodeRole),
               std::string(kBaGatesSplitKKernel),
               {"splitk"},
               "decode sizes: the weight read spread over the device, K split over a cluster",
               std::string(kDecodeLever)},
  };
  op.guards = {
      GuardDecl{std::string(kBaGatesTwinRole), ba_gates_guard().declared_reasons(), std::string(kBaGatesTooFewTokens)},
      GuardDecl{std::string(kBaGatesTensorCoreRole), ba_gates_mma_guard().declared_reasons(),
                std::string(kBaGatesMmaRejects.back())},
      // Its threshold is a ceiling (M <= the token tile), which a tuning table's min_m cannot say.
      GuardDecl{std::string(kBaGatesDecodeRole), ba_gates_decode_guard().declared_reasons()}};
  op.levers = {
      LeverSpec{std::string(kTwinLever), "METRALE_SSM_BA_GATES_HOPPER", true, "the Hopper twin"},
      LeverSpec{std::string(kTensorCoreLever), "METRALE_SSM_BA_GATES_TENSOR_CORE", true, "the tensor-core kernel"},
      // Optional in a target file (absent: off), so targets that ship no decode kernel need no key.
      LeverSpec{std::string(kDecodeLever), "METRALE_SSM_BA_GATES_DECODE", false, "the decode (split-K) kernel"}};
  op.args = {
      tensor_arg("x", ArgKind::kInput, DType::kBf16, 16, {"m", "k_stride"}, "activations, rows of k_stride"),
      tensor_arg("weight", ArgKind::kInput, DType::kBf16, 16, {"n", "k"}, "the BA projection"),
      tensor_arg("a_log", ArgKind::kInput, DType::kFp32, 4, {"nv"}, "A_log per v-head"),
      tensor_arg("dt_bias", ArgKind::kInput, DType::kFp32, 4, {"nv"}, "dt bias per v-head"),
      tensor_arg("gate_out", ArgKind::kOutput, DType::kFp32, 4, {"m", "gate_stride"},
                 "columns [0, nv) gate, [nv, 2 nv) beta"),
      scalar_arg("m", std::nullopt, UINT32_MAX, "tokens"),
      scalar_arg("n", std::nullopt, UINT32_MAX, "outputs (2 nv)"),
      scalar_arg("k", std::nullopt, UINT32_MAX, "reduction length"),
      scalar_arg("k_stride", 0, UINT32_MAX, "x's row stride in elements (0: k)").with_zero_means("k"),
      scalar_arg("gate_stride", 0, UINT32_MAX, "gate_out's row stride in elements (0: n)").with_zero_means("n"),
      scalar_arg("nv", 0, UINT32_MAX, "v-heads (0: n / 2)").with_zero_means("n/2"),
      scalar_arg("vheads_per_group", std::nullopt, UINT32_MAX, "v-heads per key group"),
  };
  // N is the tensor-core kernel's shape constant: its output tiles (ssm_ba_gates.hpp).
  op.shape_constants = {ShapeConstantDecl{std::string(kBaGatesTensorCoreRole), "n", [](std::uint64_t n) {
                                            const MmaShapeChoice choice = ba_gates_mma_shape_for(
                                                static_cast<std::uint32_t>(std::min<std::uint64_t>(n, UINT32_MAX)));
                                            return ShapeChoice{choice.tiles, choice.refusal};
                                          }}};
  require_declared_order(op, kRolesInOrder, kLeversInOrder);
  op.run = [](const OpContext& context, const OpCall& call) {
    return generic_pick(run_typed(context, unpack(call.args), call.stream, call.forced_role),
                        !call.forced_role.empty());
  };
  op.explain = explain;
  op.shape_rules = [](OpArgValues values) { validate_ba_gates_args(unpack(values)); };  // run's own
  op.profile = ssm_ba_gates_profile();                                                  // ssm_ba_gates_check.cpp
  op.check = ssm_ba_gates_check;                                                        // ssm_ba_gates_check.cpp
  require_arg_fields(op, Fields::kinds, Defaults::places);
  return op;
}

void require_ssm_ba_gates_tensors(const BaGatesArgs& args) { Fields::require_library_tensors(kOpName, args); }

// ---- The four kernels' catalog declarations (ops/op_kernels.cpp adds them through the list in
// ops/core/library_ops.cpp); each kernel's parameter rule stands beside its launcher
// (ssm_ba_gates.cpp, ssm_ba_gates_mma.cpp, ssm_ba_gates_splitk.cpp).
void add_ssm_ba_gates_kernels(KernelCatalog& catalog) {
  catalog.add({.kernel = std::string(kBaGatesParentKernel),
               .source = std::string(kBaGatesTemplateFile),
               .expression = fmt::format("{}<{{block}}, {{lanes}}>", kBaGatesParentTemplate),
               .params = {"block", "lanes"},
               .twin_of = {},  // not a twin
               .same_shape = false,
               .background = false,
               .rule = check_ssm_ba_gates});
  catalog.add({.kernel = std::string(kBaGatesTwinKernel),
               .source = std::string(kBaGatesTemplateFile),
               .expression = fmt::format("{}<{{block}}, {{lanes}}, {{groups}}>", kBaGatesTwinTemplate),
               .params = {"block", "lanes", "groups"},
               .twin_of = std::string(kBaGatesParentKernel),
               .same_shape = true,
               .background = true,
               .rule = check_ssm_ba_gates_hopper});
  // Declared in the background like a twin: until it arrives its guard says "kernel absent". Its
  // shape constant ({shape}) is TILES, ceil(N / 16) (0: the generic form).
  catalog.add({.kernel = std::string(kBaGatesMmaKernel),
               .source = std::string(kBaGatesMmaTemplateFile),
               .expression = fmt::format("{}<{{block}}, {{lanes}}, {{groups}}, {{shape}}>", kBaGatesMmaTemplate),
               .params = {"block", "lanes", "groups"},
               .twin_of = {},  // not a twin
               .same_shape = false,
               .background = true,
               .rule = check_ssm_ba_gates_mma});
  // Declared in the background like the tensor-core kernel: until it arrives its guard says
  // "kernel absent" and the parent runs the decode sizes.
  catalog.add({.kernel = std::string(kBaGatesSplitKKernel),
               .source = std::string(kBaGatesSplitKTemplateFile),
               .expression = fmt::format("{}<{{block}}, {{lanes}}, {{groups}}>", kBaGatesSplitKTemplate),
               .params = {"block", "lanes", "groups"},
               .twin_of = {},  // not a twin
               .same_shape = false,
               .background = true,
               .rule = check_ssm_ba_gates_splitk});
}

}  // namespace metrale::ops
