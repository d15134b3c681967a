// ops/ssm_ba_gates/ssm_ba_gates.cpp: the SSM BA-gates op's launch path: argument checks, grids,
// launchers and the typed entry; the twin's guard, pick and verdict log; the index mappings; the
// tensor-core kernel's guard, combined pick and shared-memory layout. Uses no reference.
// Past ~400 lines: it holds two guarded kernels (the SIMT twin, the tensor-core form) beside the parent.
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

void check_pointers(const BaGatesArgs& a) {
  detail::require_non_null(kOp, "x", a.x);
  detail::require_non_null(kOp, "weight", a.weight);
  detail::require_non_null(kOp, "a_log", a.a_log);
  detail::require_non_null(kOp, "dt_bias", a.dt_bias);
  detail::require_non_null(kOp, "gate_out", a.gate_out);
  detail::require_aligned(kOp, "x", a.x, 16);
  detail::require_aligned(kOp, "weight", a.weight, 16);
  detail::require_aligned(kOp, "a_log", a.a_log, 4);
  detail::require_aligned(kOp, "dt_bias", a.dt_bias, 4);
  detail::require_aligned(kOp, "gate_out", a.gate_out, 4);
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
  check_pointers(args);
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

Dim3 ba_gates_mma_grid(std::uint32_t m, const KernelParams& params, std::uint32_t cluster_blocks) {
  return Dim3{ceil_div(m, params.lanes) * cluster_blocks, 1, 1};
}

std::uint32_t ba_gates_mma_cluster(const GpuBackend& gpu, const KernelParams& params, const BaGatesArgs& args) {
  return ba_gates_mma_cluster_blocks(args.m, params.lanes, args.k, device_sm_count(gpu, kFallbackSmCount),
                                     gpu.compute_capability());
}

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

void launch_ba_gates_mma(GpuBackend& gpu, KernelHandle kernel, const KernelParams& params, const BaGatesArgs& args,
                         std::uint64_t stream, std::uint32_t max_cluster) {
  if (auto violation = kernel_params_violation(kBaGatesMmaKernel, params)) {
    detail::argument_error(kOp, fmt::format("{} variant {}: {}", kBaGatesMmaKernel, params.tag(), *violation));
  }
  if (args.n > kBaGatesMmaMaxN) {
    detail::argument_error(kOp, fmt::format("N={} exceeds {}, the most outputs {} holds per block", args.n,
                                            kBaGatesMmaMaxN, kBaGatesMmaKernel));
  }
  // A shape-specialised variant holds exactly its tiles' outputs (the kernel returns on another N).
  if (params.shape != 0 && ba_gates_mma_shape_for(args.n).tiles != params.shape) {
    detail::argument_error(
        kOp,
        fmt::format("{} variant {} is specialised for N in ({}, {}] ({} output tiles), not N={}", kBaGatesMmaKernel,
                    params.tag(), (params.shape - 1) * 16, params.shape * 16, params.shape, args.n));
  }
  const std::uint64_t shared = ba_gates_mma_shared_bytes(params.lanes, args.n, params.groups);
  const std::uint64_t limit = ba_gates_mma_shared_limit(gpu.max_dynamic_shared_bytes(), gpu.compute_capability());
  if (shared > limit) {
    detail::argument_error(kOp, fmt::format("{} variant {} at N={} needs {} bytes of shared memory; the device grants "
                                            "a block {}",
                                            kBaGatesMmaKernel, params.tag(), args.n, shared, limit));
  }
  const auto config_for = [&](std::uint32_t cluster) {
    LaunchConfig config;
    config.grid = ba_gates_mma_grid(args.m, params, cluster);
    config.block = Dim3{params.block, 1, 1};
    config.dynamic_shared_bytes = static_cast<std::uint32_t>(shared);
    config.stream = stream;
    config.cluster_blocks = cluster;
    return config;
  };
  const LaunchConfig config =
      fitted_cluster_config(gpu, kernel, ba_gates_mma_cluster(gpu, params, args), max_cluster, config_for);
  KernelLaunch launch(gpu, kernel);
  launch.grid(config.grid)
      .block(config.block)
      .cluster(config.cluster_blocks)
      .dynamic_shared(config.dynamic_shared_bytes);
  push_ba_gates_args(launch, args).launch(stream);
}

BaGatesMmaQuery ba_gates_mma_query(const GpuBackend& gpu, const BaGatesKernels& kernels, bool tensor_core,
                                   const BaGatesArgs& args) {
  BaGatesMmaQuery query;
  query.requested = tensor_core;
  query.kernel_present = kernels.mma.present();
  set_mma_variant(query, kernels.mma_params, gpu.compute_capability(), gpu.max_dynamic_shared_bytes());
  query.m = args.m;
  query.n = args.n;
  query.k = args.k;
  query.k_stride = args.k_stride;
  query.aligned = args.x.address % 16 == 0 && args.weight.address % 16 == 0;
  query.sm_count = device_sm_count(gpu, kernels.fallback_sm_count);
  query.tuned_min_m = kernels.mma_tuned_min_m;
  query.twin_tuned_min_m = kernels.twin_tuned_min_m;
  return query;
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
  ba_gates_mma_log(pick, levers.tensor_core, args.m, kernels.mma_params);
  if (pick.mma) {
    launch_ba_gates_mma(gpu, pick.kernel, kernels.mma_params, args, stream);
    return pick;
  }
  if (levers.decode) {
    pick = ba_gates_pick_with_decode(pick, ba_gates_decode_query(gpu, kernels, true, args), kernels.splitk);
    ba_gates_decode_log(pick, true, args.m, kernels.splitk_params);
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

const GuardTable& ba_gates_guard() {
  static const GuardTable table(kBaGatesRejects);
  return table;
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

// ---- The tensor-core BA kernel's shared-memory size, the device's
// limit and its K split.
namespace metrale::ops {

std::uint64_t ba_gates_mma_shared_bytes(std::uint32_t tokens, std::uint32_t n, std::uint32_t stages) {
  constexpr std::uint64_t kTile = 16;
  constexpr std::uint64_t kRowElems = 64 + 8;
  constexpr std::uint64_t kAccRowFloats = 128 + 4;
  const std::uint64_t rows = std::uint64_t{tokens} + (std::uint64_t{n} + kTile - 1) / kTile * kTile;
  const std::uint64_t ring = std::uint64_t{stages} * rows * kRowElems * 2;
  const std::uint64_t acc = std::uint64_t{tokens} * kAccRowFloats * 4;
  return std::max(ring, acc);
}

std::uint64_t ba_gates_mma_shared_limit(std::optional<std::uint32_t> device_limit,
                                        std::optional<ComputeCapability> compute_capability) {
  if (device_limit) {
    return *device_limit;
  }
  return compute_capability ? opt_in_shared_bytes(*compute_capability) : kDefaultSharedBytes;
}

std::uint32_t ba_gates_mma_cluster_blocks(std::uint32_t m, std::uint32_t tokens, std::uint32_t k,
                                          std::uint32_t sm_count, std::optional<ComputeCapability> compute_capability) {
  if (!compute_capability || *compute_capability < kMinClusterCapability || tokens == 0) {
    return 1;
  }
  constexpr std::uint64_t kChunk = 64;
  const std::uint64_t tiles = (std::uint64_t{m} + tokens - 1) / tokens;
  const std::uint64_t chunks = (std::uint64_t{k} + kChunk - 1) / kChunk;
  std::uint32_t blocks = 1;
  while (blocks < kMaxClusterBlocks && 2 * std::uint64_t{blocks} <= chunks && tiles * 2 * blocks <= sm_count) {
    blocks *= 2;
  }
  return blocks;
}

MmaShapeChoice ba_gates_mma_shape_for(std::uint32_t n) {
  constexpr std::uint32_t kTile = 16;
  constexpr std::uint32_t kMaxN = 128;
  if (n == 0) {
    return {0, kMmaShapeNoOutputs};
  }
  if (n > kMaxN) {
    return {0, kMmaShapeTooWide};
  }
  return {(n + kTile - 1) / kTile, {}};
}

}  // namespace metrale::ops

// ---- The tensor-core BA-gates kernel's guard, the combined pick and its
// verdict log.
namespace metrale::ops {

std::uint32_t ba_gates_mma_min_tokens(std::uint32_t sm_count, std::uint32_t tokens_per_block,
                                      std::uint32_t max_cluster_blocks) {
  const std::uint64_t blocks =
      (std::uint64_t{std::max<std::uint32_t>(sm_count, 1)} + kBaGatesMmaSmsPerTile - 1) / kBaGatesMmaSmsPerTile;
  const std::uint64_t split = std::max<std::uint32_t>(max_cluster_blocks, 1);
  const std::uint64_t tiles = (blocks + split - 1) / split;
  const std::uint64_t tokens = tiles * tokens_per_block;
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(tokens, std::numeric_limits<std::uint32_t>::max()));
}

std::uint32_t ba_gates_mma_max_cluster_blocks(std::uint32_t k, std::optional<ComputeCapability> compute_capability) {
  // One token against unlimited SMs: only K and the capability bound the split.
  return ba_gates_mma_cluster_blocks(1, 1, k, std::numeric_limits<std::uint32_t>::max(), compute_capability);
}

std::uint32_t ba_gates_mma_min_m(const BaGatesMmaQuery& query) {
  if (query.tuned_min_m) {
    return *query.tuned_min_m;
  }
  return ba_gates_mma_min_tokens(query.sm_count, query.tokens_per_block,
                                 ba_gates_mma_max_cluster_blocks(query.k, query.compute_capability));
}

void set_mma_variant(BaGatesMmaQuery& query, const KernelParams& mma,
                     std::optional<ComputeCapability> compute_capability,
                     std::optional<std::uint32_t> device_shared_limit) {
  query.tokens_per_block = mma.lanes;
  query.stages = mma.groups;
  query.compute_capability = compute_capability;
  query.max_shared_bytes = ba_gates_mma_shared_limit(device_shared_limit, compute_capability);
}

std::optional<std::string_view> ssm_ba_gates_mma_reject(const BaGatesMmaQuery& q) {
  return first_failed(
      {{kBaGatesMmaRejects[0], q.requested},
       {kBaGatesMmaRejects[1], q.kernel_present},
       {kBaGatesMmaRejects[2], q.compute_capability && *q.compute_capability >= kBaGatesMmaMinCc},
       {kBaGatesMmaRejects[3], q.n != 0 && q.k != 0},
       {kBaGatesMmaRejects[4], q.n <= kBaGatesMmaMaxN},
       {kBaGatesMmaRejects[5], q.k % 8 == 0 && q.k_stride % 8 == 0},
       {kBaGatesMmaRejects[6], q.k_stride >= q.k},
       {kBaGatesMmaRejects[7], q.aligned},
       {kBaGatesMmaRejects[8], ba_gates_mma_shared_bytes(q.tokens_per_block, q.n, q.stages) <= q.max_shared_bytes},
       {kBaGatesMmaRejects[9], q.m >= ba_gates_mma_min_m(q)}});
}

BaGatesPick ba_gates_pick_with_mma(const BaGatesMmaQuery& query, KernelHandle mma, bool twin_requested,
                                   KernelHandle parent, KernelHandle twin, bool parent_launchable) {
  BaGatesMmaQuery asked = query;
  asked.kernel_present = mma.present();
  const auto mma_reject = ssm_ba_gates_mma_reject(asked);
  if (!mma_reject) {
    BaGatesPick pick{mma, false, std::nullopt};
    pick.mma = true;
    return pick;
  }
  BaGatesPick pick = ba_gates_pick(twin_requested, parent, twin, query.m, query.n, query.k, query.k_stride,
                                   query.sm_count, parent_launchable, query.twin_tuned_min_m);
  pick.mma_reject = mma_reject;
  return pick;
}

const GuardTable& ba_gates_mma_guard() {
  static const GuardTable table(kBaGatesMmaRejects);
  return table;
}

std::optional<OpLogSlot> ba_gates_mma_log_slot(const BaGatesPick& pick, bool requested) {
  return ba_gates_mma_guard().consulted_slot(pick.mma, pick.mma_reject, requested);
}

std::optional<std::string> ba_gates_mma_log_line(const BaGatesPick& pick, bool requested, std::uint32_t m,
                                                 const KernelParams& mma, OnceSlots& said) {
  if (!ba_gates_mma_guard().claim_consulted(pick.mma, pick.mma_reject, requested, said)) {
    return std::nullopt;
  }
  if (!pick.mma) {
    return fmt::format(
        "SSM ba_gates: the tensor-core kernel is NOT running at M={}: {} "
        "(METRALE_SSM_BA_GATES_TENSOR_CORE)",
        m, *pick.mma_reject);
  }
  return fmt::format(
      "SSM ba_gates: ssm_ba_gates_mma (METRALE_SSM_BA_GATES_TENSOR_CORE) M={} block={} tokens/tile={} "
      "grid=(ceil(M/{}) x K split,1,1)",
      m, mma.block, mma.lanes, mma.lanes);
}

OnceSlots& ba_gates_mma_log_slots() { return ba_gates_mma_guard().process_slots(); }

void ba_gates_mma_log(const BaGatesPick& pick, bool requested, std::uint32_t m, const KernelParams& mma) {
  log_verdict_line(ba_gates_mma_log_line(pick, requested, m, mma, ba_gates_mma_log_slots()));
}

}  // namespace metrale::ops
