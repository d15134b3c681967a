// ops/ssm_ba_gates/ssm_ba_gates_splitk.cpp: the BA-gates decode kernel (ssm_ba_gates_splitk) on
// the host side: its parameter rule, grid, K split and launcher; its guard, its place in the pick
// (after the tensor-core guard, before the seeds' twin/parent) and its verdict log.
// Invariants: as ssm_ba_gates.hpp's decode section; the launcher asks for exactly the dynamic
// shared memory the kernel indexes (ba_gates_splitk_shared_bytes) and never launches a grid past
// CUDA's limits. Uses no reference.
#include <fmt/format.h>

#include <algorithm>

#include "metrale/gpu/kernel_launch.hpp"
#include "metrale/gpu/launch_config.hpp"
#include "metrale/ops/ssm_ba_gates.hpp"
#include "ops/op_checks.hpp"
#include "ops/op_kernel_rules.hpp"
#include "ops/op_kernels.hpp"
#include "ops/ssm_ba_gates/ssm_ba_gates.hpp"

// ---- The kernel's parameter rule, grid, K split and launcher.
namespace metrale::ops {
namespace {

constexpr std::string_view kOp = "ssm_ba_gates";
constexpr std::uint32_t kMaxTokens = 128;
constexpr std::uint32_t kMaxOuts = 16;

std::uint64_t ceil_div64(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

}  // namespace

std::optional<KernelParamsProblem> check_ssm_ba_gates_splitk(const KernelParams& p) {
  if (p.block < 32 || p.block > kMaxBlock || p.block % 32 != 0) {
    return problem("block", fmt::format("block = {}: must be whole warps in [32, {}]", p.block, kMaxBlock));
  }
  if (p.lanes < 1 || p.lanes > kMaxTokens) {
    return problem("lanes", fmt::format("lanes = {}: the token tile must be in [1, {}]", p.lanes, kMaxTokens));
  }
  if (p.groups < 1 || p.groups > kMaxOuts) {
    return problem("groups", fmt::format("groups = {}: the outputs per CTA must be in [1, {}]", p.groups, kMaxOuts));
  }
  return std::nullopt;
}

std::uint64_t ba_gates_splitk_shared_bytes(std::uint32_t tokens, std::uint32_t outs) {
  return std::uint64_t{tokens} * outs * sizeof(float);
}

std::uint32_t ba_gates_splitk_cluster_blocks(std::uint32_t m, std::uint32_t n, std::uint32_t k, std::uint32_t tokens,
                                             std::uint32_t outs, std::uint32_t sm_count,
                                             std::optional<ComputeCapability> compute_capability) {
  if (!compute_capability || *compute_capability < kBaGatesDecodeMinCc || tokens == 0 || outs == 0) {
    return 1;
  }
  const std::uint64_t vectors = k / 8;
  const std::uint64_t ctas = ceil_div64(n, outs) * ceil_div64(m, tokens);
  const std::uint64_t sms = std::max<std::uint32_t>(sm_count, 1);
  std::uint32_t blocks = 1;
  while (blocks < kMaxClusterBlocks && vectors >= std::uint64_t{2} * blocks * kBaGatesDecodeMinVectorsPerCta &&
         ctas * 2 * blocks <= sms) {
    blocks *= 2;
  }
  return blocks;
}

SplitKGrid ba_gates_splitk_grid(std::uint32_t m, std::uint32_t n, const KernelParams& params,
                                std::uint32_t cluster_blocks) {
  return SplitKGrid{
      ceil_div64(n, std::max<std::uint32_t>(params.groups, 1)) * std::max<std::uint32_t>(cluster_blocks, 1),
      ceil_div64(m, std::max<std::uint32_t>(params.lanes, 1))};
}

std::uint32_t ba_gates_splitk_cluster(const GpuBackend& gpu, const KernelParams& params, const BaGatesArgs& args) {
  return ba_gates_splitk_cluster_blocks(args.m, args.n, args.k, params.lanes, params.groups,
                                        device_sm_count(gpu, kFallbackSmCount), gpu.compute_capability());
}

void launch_ba_gates_splitk(GpuBackend& gpu, KernelHandle kernel, const KernelParams& params, const BaGatesArgs& args,
                            std::uint64_t stream, std::uint32_t max_cluster) {
  if (auto violation = kernel_params_violation(kBaGatesSplitKKernel, params)) {
    detail::argument_error(kOp, fmt::format("{} variant {}: {}", kBaGatesSplitKKernel, params.tag(), *violation));
  }
  const auto config_for = [&](std::uint32_t cluster) {
    const SplitKGrid grid = ba_gates_splitk_grid(args.m, args.n, params, cluster);
    if (grid.x > detail::kMaxGridX || grid.y > detail::kMaxGridY) {
      detail::argument_error(
          kOp, fmt::format("{} at M={} N={} needs a grid of ({}, {}) CTAs, past CUDA's ({}, {})", kBaGatesSplitKKernel,
                           args.m, args.n, grid.x, grid.y, detail::kMaxGridX, detail::kMaxGridY));
    }
    LaunchConfig config;
    config.grid = Dim3{static_cast<std::uint32_t>(grid.x), static_cast<std::uint32_t>(grid.y), 1};
    config.block = Dim3{params.block, 1, 1};
    config.dynamic_shared_bytes = static_cast<std::uint32_t>(ba_gates_splitk_shared_bytes(params.lanes, params.groups));
    config.stream = stream;
    config.cluster_blocks = cluster;
    return config;
  };
  launch_ba_gates_in_clusters(gpu, kernel, ba_gates_splitk_cluster(gpu, params, args), max_cluster, config_for, args,
                              stream);
}

}  // namespace metrale::ops

// ---- The decode guard, its place in the pick, and its verdict log.
namespace metrale::ops {

std::uint32_t ba_gates_decode_max_m(const BaGatesDecodeQuery& query) { return query.tokens_per_tile; }

std::optional<std::string_view> ssm_ba_gates_decode_reject(const BaGatesDecodeQuery& q) {
  const auto split = [&] {
    return ba_gates_splitk_cluster_blocks(q.m, q.n, q.k, q.tokens_per_tile, q.outs_per_block, q.sm_count,
                                          q.compute_capability);
  };
  return first_failed({{kBaGatesDecodeRejects[0], q.requested},
                       {kBaGatesDecodeRejects[1], q.kernel_present},
                       {kBaGatesDecodeRejects[2], q.compute_capability && *q.compute_capability >= kBaGatesDecodeMinCc},
                       {kBaGatesDecodeRejects[3], q.n != 0 && q.k != 0},
                       {kBaGatesDecodeRejects[4], q.k % 8 == 0 && q.k_stride % 8 == 0},
                       {kBaGatesDecodeRejects[5], q.k_stride >= q.k},
                       {kBaGatesDecodeNoSplit, split() > 1},
                       {kBaGatesDecodeTooManyTokens, q.m <= ba_gates_decode_max_m(q)}});
}

BaGatesPick ba_gates_pick_with_decode(const BaGatesPick& after_mma, const BaGatesDecodeQuery& query,
                                      KernelHandle splitk) {
  if (after_mma.mma) {
    return after_mma;
  }
  BaGatesDecodeQuery asked = query;
  asked.kernel_present = splitk.present();
  const auto reject = ssm_ba_gates_decode_reject(asked);
  if (reject) {
    BaGatesPick pick = after_mma;
    pick.decode_reject = reject;
    return pick;
  }
  BaGatesPick pick{splitk, false, std::nullopt};
  pick.mma_reject = after_mma.mma_reject;
  pick.decode = true;
  return pick;
}

BaGatesDecodeQuery ba_gates_decode_query(const KernelParams& splitk, bool requested, bool kernel_present,
                                         std::optional<ComputeCapability> compute_capability, std::uint32_t sm_count,
                                         const BaGatesArgs& shape) {
  BaGatesDecodeQuery query;
  query.requested = requested;
  query.kernel_present = kernel_present;
  query.compute_capability = compute_capability;
  query.set_shape(shape);
  query.sm_count = sm_count;
  query.tokens_per_tile = splitk.lanes;
  query.outs_per_block = splitk.groups;
  return query;
}

BaGatesDecodeQuery ba_gates_decode_query(const GpuBackend& gpu, const BaGatesKernels& kernels, bool decode,
                                         const BaGatesArgs& args) {
  return ba_gates_decode_query(kernels.splitk_params, decode, kernels.splitk.present(), gpu.compute_capability(),
                               device_sm_count(gpu, kernels.fallback_sm_count), args);
}

const GuardTable& ba_gates_decode_guard() { return guard_table_of<kBaGatesDecodeRejects>(); }

constexpr BaConsultedKernel kBaGatesDecodeConsulted{
    .kernel = kSsmBaGatesSplitK,
    .what = "decode",
    .lever_env = "METRALE_SSM_BA_GATES_DECODE",
    .layout =
        [](const KernelParams& p) {
          return fmt::format("outputs/CTA={} grid=(ceil(N/{}) x K split,ceil(M/{}),1)", p.groups, p.groups, p.lanes);
        },
    .guard = ba_gates_decode_guard,
    .ran = &BaGatesPick::decode,
    .reject = &BaGatesPick::decode_reject};

}  // namespace metrale::ops
