// ssm_ba_gates.cpp: the SSM BA-gates op: argument checks, grids, launchers and the entry.
#include "metrale/ops/ssm_ba_gates.hpp"

#include <fmt/format.h>

#include "metrale/error.hpp"
#include "metrale/gpu/kernel_launch.hpp"
#include "ops/op_checks.hpp"
#include "ops/op_kernels.hpp"
#include "ops/op_verdict.hpp"
#include "ops/ssm_ba_gates/ssm_ba_gates_guard.hpp"
#include "ops/ssm_ba_gates/ssm_ba_gates_mma_guard.hpp"
#include "target/kernel_catalog.hpp"

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

KernelLaunch& push_args(KernelLaunch& launch, const BaGatesArgs& a) {
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

}  // namespace

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
  push_args(launch, args).launch(stream);
}

void launch_ba_gates_twin(GpuBackend& gpu, KernelHandle kernel, const KernelParams& params, const BaGatesArgs& args,
                          std::uint64_t stream) {
  validate_ba_gates_params(params, true);
  KernelLaunch launch(gpu, kernel);
  launch.grid(ba_gates_twin_grid(args.m)).block(Dim3{params.block, 1, 1});
  push_args(launch, args).launch(stream);
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
  // A cluster the device cannot schedule (another context holding SMs, a partitioned GPU) would
  // fail the launch: halve it until the device says it fits or cannot say.
  const auto config_for = [&](std::uint32_t cluster) {
    LaunchConfig config;
    config.grid = ba_gates_mma_grid(args.m, params, cluster);
    config.block = Dim3{params.block, 1, 1};
    config.dynamic_shared_bytes = static_cast<std::uint32_t>(shared);
    config.stream = stream;
    config.cluster_blocks = cluster;
    return config;
  };
  std::uint32_t cluster = ba_gates_mma_cluster(gpu, params, args);
  while (cluster > 1 && (cluster > max_cluster || gpu.max_active_clusters(kernel, config_for(cluster)) == 0U)) {
    cluster /= 2;
  }
  const LaunchConfig config = config_for(cluster);
  KernelLaunch launch(gpu, kernel);
  launch.grid(config.grid).block(config.block).cluster(cluster).dynamic_shared(config.dynamic_shared_bytes);
  push_args(launch, args).launch(stream);
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
  const BaGatesPick pick =
      ba_gates_pick_with_mma(ba_gates_mma_query(gpu, kernels, levers.tensor_core, args), kernels.mma, requested,
                             kernels.parent, kernels.twin, parent_launchable);
  ba_gates_mma_log(pick, levers.tensor_core, args.m, kernels.mma_params);
  if (pick.mma) {
    launch_ba_gates_mma(gpu, pick.kernel, kernels.mma_params, args, stream);
    return pick;
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
