// ops/ssm_ba_gates/ssm_ba_gates.cpp: the SSM BA-gates op's launch path: argument checks, the
// parent's and the twin's grids and launchers, and the typed entry that runs the guards in order
// (tensor core, decode, twin, parent); the twin's guard, pick and verdict log; the index mappings;
// the parent's and the twin's parameter rules.
// The tensor-core kernel's host side is ssm_ba_gates_mma.cpp, the decode kernel's
// ssm_ba_gates_splitk.cpp. Uses no reference.
#include "ops/ssm_ba_gates/ssm_ba_gates.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "hardware/kernel_catalog.hpp"
#include "metrale/error.hpp"
#include "metrale/gpu/kernel_launch.hpp"
#include "metrale/gpu/launch_config.hpp"
#include "metrale/ops/ssm_ba_gates.hpp"
#include "metrale/target/levers.hpp"
#include "ops/op_checks.hpp"
#include "ops/op_guard_table.hpp"
#include "ops/op_kernel_rules.hpp"
#include "ops/op_kernels.hpp"
#include "ops/op_verdict.hpp"

// ---- The SSM BA-gates op: argument checks, grids, launchers and the entry.
namespace metrale::ops {
namespace {

constexpr std::string_view kOp = "ssm_ba_gates";

std::uint32_t ceil_div(std::uint32_t a, std::uint32_t b) {
  return static_cast<std::uint32_t>((std::uint64_t{a} + b - 1) / b);
}

void check_shape(const BaGatesArgs& a) {
  using detail::argument_error;
  if (a.m == 0 || a.n == 0 || a.k == 0) {
    argument_error(kOp, fmt::format("empty shape M={} N={} K={}: M, N and K must be positive", a.m, a.n, a.k));
  }
  if (a.k % 8 != 0) {
    argument_error(kOp, fmt::format("K={} is not a multiple of 8 (the kernels read 16-byte vectors of 8 bf16)", a.k));
  }
  if (a.k_stride < a.k) {
    argument_error(
        kOp, fmt::format("K_stride={} < K={}: the activation row is shorter than the reduction", a.k_stride, a.k));
  }
  if (a.k_stride % 8 != 0) {
    argument_error(
        kOp, fmt::format("K_stride={} is not a multiple of 8 (activation rows must be 16-byte aligned)", a.k_stride));
  }
  if (a.n % 2 != 0 || a.nv != a.n / 2) {
    argument_error(kOp, fmt::format("N={} and nv={}: N must be even with nv == N/2 (one beta and one gate per v-head)",
                                    a.n, a.nv));
  }
  if (a.gate_stride < 2 * std::uint64_t{a.nv}) {
    argument_error(kOp, fmt::format("gate_stride={} < 2*nv={}: the gate row cannot hold gate and beta", a.gate_stride,
                                    2 * std::uint64_t{a.nv}));
  }
  if (a.vheads_per_group == 0 || a.nv % a.vheads_per_group != 0) {
    argument_error(kOp, fmt::format("vheads_per_group={} must be positive and divide nv={}", a.vheads_per_group, a.nv));
  }
  detail::checked_extent_bytes(kOp, "x extent (M x K_stride bf16)", a.m, a.k_stride, 2);
  detail::checked_extent_bytes(kOp, "weight extent (N x K bf16)", a.n, a.k, 2);
  detail::checked_extent_bytes(kOp, "gate_out extent (M x gate_stride fp32)", a.m, a.gate_stride, 4);
  if (a.m > detail::kMaxGridX) {
    argument_error(kOp, fmt::format("M={} exceeds the largest grid.x ({})", a.m, detail::kMaxGridX));
  }
}

std::uint32_t outs_per_block(const KernelParams& params) { return params.block / params.lanes; }

}  // namespace

KernelLaunch& push_ba_gates_args(KernelLaunch& launch, const BaGatesArgs& a) {
  return launch.arg_ptr(a.x)
      .arg_ptr(a.weight)
      .arg_ptr(a.a_log)
      .arg_ptr(a.dt_bias)
      .arg_ptr(a.gate_out)
      .arg_u32(a.m)
      .arg_u32(a.n)
      .arg_u32(a.k)
      .arg_u32(a.k_stride)
      .arg_u32(a.gate_stride)
      .arg_u32(a.nv)
      .arg_u32(a.vheads_per_group);
}

void validate_ba_gates_args(const BaGatesArgs& args) {
  require_ssm_ba_gates_tensors(args);
  check_shape(args);
}

void validate_ba_gates_params(const KernelParams& params, bool twin) {
  const std::string_view kernel = twin ? kBaGatesTwinKernel : kBaGatesParentKernel;
  if (auto violation = kernel_params_violation(kernel, params)) {
    detail::argument_error(kOp, fmt::format("{} variant {}: {}", kernel, params.tag(), *violation));
  }
}

Dim3 ba_gates_parent_grid(std::uint32_t m, std::uint32_t n, const KernelParams& params) {
  return Dim3{m, ceil_div(n, outs_per_block(params)), 1};
}

Dim3 ba_gates_twin_grid(std::uint32_t m) { return Dim3{m, 1, 1}; }

void launch_ba_gates_parent(GpuBackend& gpu, KernelHandle kernel, const KernelParams& params, const BaGatesArgs& args,
                            std::uint64_t stream) {
  validate_ba_gates_params(params, false);
  const Dim3 grid = ba_gates_parent_grid(args.m, args.n, params);
  if (grid.y > detail::kMaxGridY) {
    detail::argument_error(kOp, fmt::format("N={} needs {} blocks per token, more than grid.y allows ({})", args.n,
                                            grid.y, detail::kMaxGridY));
  }
  KernelLaunch launch(gpu, kernel);
  launch.grid(grid).block(Dim3{params.block, 1, 1});
  push_ba_gates_args(launch, args).launch(stream);
}

void launch_ba_gates_twin(GpuBackend& gpu, KernelHandle kernel, const KernelParams& params, const BaGatesArgs& args,
                          std::uint64_t stream) {
  validate_ba_gates_params(params, true);
  KernelLaunch launch(gpu, kernel);
  launch.grid(ba_gates_twin_grid(args.m)).block(Dim3{params.block, 1, 1});
  push_ba_gates_args(launch, args).launch(stream);
}

BaGatesPick ssm_ba_gates(GpuBackend& gpu, const BaGatesKernels& kernels, bool requested, const BaGatesArgs& args,
                         std::uint64_t stream) {
  return ssm_ba_gates(gpu, kernels, BaGatesLevers{requested, false}, args, stream);
}

BaGatesPick ssm_ba_gates(GpuBackend& gpu, const BaGatesKernels& kernels, const BaGatesLevers& levers,
                         const BaGatesArgs& args, std::uint64_t stream) {
  validate_ba_gates_args(args);
  const bool requested = levers.twin;
  // Parameters the catalog refuses are the parent launcher's error, not this check's.
  const KernelParams& parent = kernels.parent_params;
  const bool sane = parent.lanes != 0 && parent.block >= parent.lanes;
  const std::uint32_t parent_blocks = sane ? ba_gates_parent_grid(args.m, args.n, parent).y : 0;
  const bool parent_launchable = parent_blocks <= detail::kMaxGridY;
  BaGatesPick pick = ba_gates_pick_with_mma(ba_gates_mma_query(gpu, kernels, levers.tensor_core, args), kernels.mma,
                                            requested, kernels.parent, kernels.twin, parent_launchable);
  ba_gates_consulted_log(kBaGatesMmaConsulted, pick, levers.tensor_core, args.m, kernels.mma_params);
  if (pick.mma) {
    launch_ba_gates_mma(gpu, pick.kernel, kernels.mma_params, args, stream);
    return pick;
  }
  if (levers.decode) {
    pick = ba_gates_pick_with_decode(pick, ba_gates_decode_query(gpu, kernels, true, args), kernels.splitk);
    ba_gates_consulted_log(kBaGatesDecodeConsulted, pick, true, args.m, kernels.splitk_params);
    if (pick.decode) {
      launch_ba_gates_splitk(gpu, pick.kernel, kernels.splitk_params, args, stream);
      return pick;
    }
  } else {
    // The guard's own first answer with the lever off, without building its query on every call.
    pick.decode_reject = kBaGatesDecodeRejects[0];
  }
  if (!pick.twin && !parent_launchable) {
    detail::argument_error(kOp, fmt::format("N={} needs {} parent blocks per token, more than grid.y allows ({}), "
                                            "and the twin cannot take it ({})",
                                            args.n, parent_blocks, detail::kMaxGridY, pick.reject.value_or("")));
  }
  ba_gates_log(pick, requested, args.m);
  if (!pick.kernel.present()) {
    throw BackendError(
        fmt::format("{}: no kernel to run: the parent dense_gemm_ba_gates_prefill is absent and the "
                    "twin declined ({})",
                    kOp, pick.reject.value_or("")));
  }
  if (pick.twin) {
    launch_ba_gates_twin(gpu, pick.kernel, kernels.twin_params, args, stream);
  } else {
    launch_ba_gates_parent(gpu, pick.kernel, kernels.parent_params, args, stream);
  }
  return pick;
}

}  // namespace metrale::ops

// ---- The BA-gates twin's guard, pick and verdict log.
namespace metrale::ops {

std::uint32_t ba_gates_min_tokens(std::uint32_t sm_count) { return min_ctas(sm_count); }

std::uint32_t ba_gates_twin_floor(std::uint32_t sm_count, std::optional<std::uint32_t> tuned_min_m) {
  return tuned_min_m.value_or(ba_gates_min_tokens(sm_count));
}

std::optional<std::string_view> ssm_ba_gates_hopper_reject(bool requested, bool kernel_present, std::uint32_t m,
                                                           std::uint32_t n, std::uint32_t k, std::uint32_t k_stride,
                                                           std::uint32_t sm_count,
                                                           std::optional<std::uint32_t> tuned_min_m) {
  return first_failed({{kBaGatesRejects[0], requested},
                       {kBaGatesRejects[1], kernel_present},
                       {kBaGatesRejects[2], n != 0 && k != 0},
                       {kBaGatesRejects[3], k % 8 == 0},
                       {kBaGatesRejects[4], k_stride >= k},
                       {kBaGatesRejects[5], m >= ba_gates_twin_floor(sm_count, tuned_min_m)}});
}

BaGatesPick ba_gates_pick(bool requested, KernelHandle parent, KernelHandle twin, std::uint32_t m, std::uint32_t n,
                          std::uint32_t k, std::uint32_t k_stride, std::uint32_t sm_count, bool parent_launchable,
                          std::optional<std::uint32_t> tuned_min_m) {
  const auto reject = ssm_ba_gates_hopper_reject(requested, twin.present(), m, n, k, k_stride, sm_count, tuned_min_m);
  const bool only_a_preference = reject == kBaGatesRejects[0] || reject == kBaGatesTooFewTokens;
  if (!reject || (!parent_launchable && twin.present() && only_a_preference)) {
    return BaGatesPick{twin, true, std::nullopt};
  }
  return BaGatesPick{parent, false, reject};
}

const GuardTable& ba_gates_guard() { return guard_table_of<kBaGatesRejects>(); }

std::string ba_gates_consulted_text(const BaConsultedKernel& kernel, bool ran, std::optional<std::string_view> reject,
                                    std::uint32_t m, const KernelParams& params) {
  if (ran) {
    return fmt::format("SSM ba_gates: {} ({}) M={} block={} tokens/tile={} {}", kernel.kernel, kernel.lever_env, m,
                       params.block, params.lanes, kernel.layout(params));
  }
  // A claimed refusal has a reason: the empty one (not consulted) has no slot to claim.
  return fmt::format("SSM ba_gates: the {} kernel is NOT running at M={}: {} ({})", kernel.what, m, reject.value_or(""),
                     kernel.lever_env);
}

std::optional<OpLogSlot> ba_gates_consulted_log_slot(const BaConsultedKernel& kernel, const BaGatesPick& pick,
                                                     bool requested) {
  return kernel.guard().consulted_slot(pick.*kernel.ran, pick.*kernel.reject, requested);
}

std::optional<std::string> ba_gates_consulted_log_line(const BaConsultedKernel& kernel, const BaGatesPick& pick,
                                                       bool requested, std::uint32_t m, const KernelParams& params,
                                                       OnceSlots& said) {
  if (!kernel.guard().claim_consulted(pick.*kernel.ran, pick.*kernel.reject, requested, said)) {
    return std::nullopt;
  }
  return ba_gates_consulted_text(kernel, pick.*kernel.ran, pick.*kernel.reject, m, params);
}

void ba_gates_consulted_log(const BaConsultedKernel& kernel, const BaGatesPick& pick, bool requested, std::uint32_t m,
                            const KernelParams& params) {
  log_verdict_line(ba_gates_consulted_log_line(kernel, pick, requested, m, params, kernel.guard().process_slots()));
}

std::optional<OpLogSlot> ba_gates_log_slot(const BaGatesPick& pick, bool requested) {
  return ba_gates_guard().slot_of(pick.reject, requested);
}

std::optional<std::string> ba_gates_log_line(const BaGatesPick& pick, bool requested, std::uint32_t m,
                                             OnceSlots& said) {
  if (!ba_gates_guard().claim(pick.reject, requested, said)) {
    return std::nullopt;
  }
  if (pick.reject) {
    return fmt::format("SSM ba_gates: the Hopper twin is NOT running at M={}: {} (METRALE_SSM_BA_GATES_HOPPER)", m,
                       *pick.reject);
  }
  return fmt::format(
      "SSM ba_gates: dense_gemm_ba_gates_prefill_hopper (METRALE_SSM_BA_GATES_HOPPER) M={} block={} grid=(M,1,1)", m,
      kBaGatesBlock);
}

OnceSlots& ba_gates_log_slots() { return ba_gates_guard().process_slots(); }

void ba_gates_log(const BaGatesPick& pick, bool requested, std::uint32_t m) {
  log_verdict_line(ba_gates_log_line(pick, requested, m, ba_gates_log_slots()));
}

}  // namespace metrale::ops

// ---- The BA-gates index mappings, mirrored from src/ops/ssm_ba_gates/ssm_ba_gates.cuh.
namespace metrale::ops {

std::vector<std::uint32_t> ba_gates_lane_kv(std::uint32_t lane, std::uint32_t k_vec) {
  std::vector<std::uint32_t> out;
  for (std::uint64_t kv = lane; kv < k_vec; kv += kBaGatesLanes) {
    out.push_back(static_cast<std::uint32_t>(kv));
  }
  return out;
}

std::uint32_t ba_gates_output(std::uint32_t group, std::uint32_t local_out) { return group * kBaGatesOuts + local_out; }

std::uint32_t ba_gates_warp(std::uint32_t local_out, std::uint32_t lane) { return local_out * 2 + lane / 32; }

std::pair<std::uint32_t, std::uint32_t> ba_gates_cross_warp_pair(std::uint32_t local_out) {
  return {local_out * 2, local_out * 2 + 1};
}

BaGatesSlot ba_gates_slot(std::uint32_t n, std::uint32_t vheads_per_group) {
  const std::uint32_t group_dim = 2 * vheads_per_group;
  const std::uint32_t within = n % group_dim;
  const std::uint32_t base = (n / group_dim) * vheads_per_group;
  if (within < vheads_per_group) {
    return BaGatesSlot{true, base + within};
  }
  return BaGatesSlot{false, base + (within - vheads_per_group)};
}

std::uint32_t ba_gates_twin_row_reads(std::uint32_t n, std::uint32_t outs, std::uint32_t groups) {
  const std::uint32_t output_groups = (n + outs - 1) / outs;
  return (output_groups + groups - 1) / groups * outs;
}

}  // namespace metrale::ops

// ---- The parent's and the twin's parameter rules (their catalog declarations are in
// ssm_ba_gates_op.cpp).
// Why these rules: ssm_ba_gates reduces one output over 64 lanes (a 32-lane xor-shuffle per warp,
// then warp_even + warp_odd), so lanes is fixed and block holds whole outputs.
namespace metrale::ops {
namespace {

constexpr std::uint32_t kBaLanes = 64;
constexpr std::uint32_t kBaMaxGroups = 16;

}  // namespace

namespace {

std::optional<KernelParamsProblem> check_ba_shape(const KernelParams& p) {
  if (p.lanes != kBaLanes) {
    return problem("lanes", fmt::format("lanes = {}: must be {} (a 32-lane shuffle per warp, then a pairwise "
                                        "cross-warp sum: exactly two warps per output)",
                                        p.lanes, kBaLanes));
  }
  if (p.block < kBaLanes || p.block > kMaxBlock || p.block % p.lanes != 0) {
    return problem("block", fmt::format("block = {}: must be a multiple of lanes ({}) in [{}, {}]", p.block, p.lanes,
                                        kBaLanes, kMaxBlock));
  }
  return std::nullopt;
}
}  // namespace

std::optional<KernelParamsProblem> check_ssm_ba_gates(const KernelParams& p) {
  if (auto shape = check_ba_shape(p)) {
    return shape;
  }
  if (p.groups != 0) {
    return problem("groups", fmt::format("groups = {}: must be absent (one output group per block)", p.groups));
  }
  return std::nullopt;
}

std::optional<KernelParamsProblem> check_ssm_ba_gates_hopper(const KernelParams& p) {
  if (auto shape = check_ba_shape(p)) {
    return shape;
  }
  if (p.groups < 1 || p.groups > kBaMaxGroups) {
    return problem("groups", fmt::format("groups = {}: must be in [1, {}]", p.groups, kBaMaxGroups));
  }
  return std::nullopt;
}

}  // namespace metrale::ops
