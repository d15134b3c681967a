// ops/ssm_ba_gates/ssm_ba_gates_mma.cpp: the BA-gates tensor-core kernel (ssm_ba_gates_mma) on
// the host side: its parameter rule, grid, K split, shared-memory size and launcher; its guard, the
// pick it heads (before the decode guard and the seeds' twin/parent) and its verdict log.
// Invariants: as ssm_ba_gates.hpp's tensor-core sections; the launcher refuses a variant whose
// shared memory the device does not grant and a specialised variant at another N, and never
// launches a cluster the device cannot hold. Uses no reference.
#include <fmt/format.h>

#include <algorithm>

#include "hardware/kernel_catalog.hpp"
#include "metrale/gpu/kernel_launch.hpp"
#include "metrale/gpu/launch_config.hpp"
#include "metrale/ops/ssm_ba_gates.hpp"
#include "ops/op_checks.hpp"
#include "ops/op_guard_table.hpp"
#include "ops/op_kernel_rules.hpp"
#include "ops/op_kernels.hpp"
#include "ops/op_verdict.hpp"
#include "ops/ssm_ba_gates/ssm_ba_gates.hpp"

// ---- The kernel's parameter rule, grid, K split and launcher.
// Why this rule: `lanes` is the token tile (16-row MMA tiles, at most 128), split evenly over the
// warps with 8 output tiles per token tile, and `groups` the K stages of the shared-memory ring,
// which at N = 128 must fit the 227 KiB the largest devices grant a block (a smaller device's
// guard refuses what does not fit it).
namespace metrale::ops {
namespace {

constexpr std::string_view kOp = "ssm_ba_gates";
constexpr std::uint32_t kMmaTile = 16;
constexpr std::uint32_t kMmaMaxTokens = 128;
constexpr std::uint32_t kMmaMinStages = 2;
constexpr std::uint32_t kMmaMaxStages = 16;
constexpr std::uint32_t kMmaOutTiles = 8;

std::uint32_t ceil_div(std::uint32_t a, std::uint32_t b) { return (a + b - 1) / b; }

}  // namespace

std::optional<KernelParamsProblem> check_ssm_ba_gates_mma(const KernelParams& p) {
  if (p.lanes < kMmaTile || p.lanes > kMmaMaxTokens || p.lanes % kMmaTile != 0) {
    return problem("lanes", fmt::format("lanes = {}: the token tile must be a multiple of {} in [{}, {}] (16-row MMA "
                                        "tiles)",
                                        p.lanes, kMmaTile, kMmaTile, kMmaMaxTokens));
  }
  const std::uint32_t token_tiles = p.lanes / kMmaTile;
  if (p.block < 32 || p.block > kMaxBlock || p.block % 32 != 0 || (p.block / 32) % token_tiles != 0 ||
      kMmaOutTiles % (p.block / 32 / token_tiles) != 0) {
    return problem("block", fmt::format("block = {}: must be whole warps in [32, {}], a multiple of the {} token "
                                        "tiles, with warps per token tile dividing {} output tiles",
                                        p.block, kMaxBlock, token_tiles, kMmaOutTiles));
  }
  if (p.groups < kMmaMinStages || p.groups > kMmaMaxStages) {
    return problem(
        "groups", fmt::format("groups = {}: the K stages must be in [{}, {}]", p.groups, kMmaMinStages, kMmaMaxStages));
  }
  const std::uint64_t shared = ba_gates_mma_shared_bytes(p.lanes, kBaGatesMmaMaxN, p.groups);
  if (shared > kMaxOptInSharedBytes) {
    return problem("groups", fmt::format("groups = {}: {} stages of {} tokens and 128 outputs need {} bytes of shared "
                                         "memory, past the {} a block may have",
                                         p.groups, p.groups, p.lanes, shared, kMaxOptInSharedBytes));
  }
  if (p.shape > kMmaOutTiles) {
    return problem("shape", fmt::format("shape = {}: the output tiles of a specialised variant must be in [1, {}] (0: "
                                        "the generic form)",
                                        p.shape, kMmaOutTiles));
  }
  return std::nullopt;
}

Dim3 ba_gates_mma_grid(std::uint32_t m, const KernelParams& params, std::uint32_t cluster_blocks) {
  return Dim3{ceil_div(m, params.lanes) * cluster_blocks, 1, 1};
}

std::uint32_t ba_gates_mma_cluster(const GpuBackend& gpu, const KernelParams& params, const BaGatesArgs& args) {
  return ba_gates_mma_cluster_blocks(args.m, params.lanes, args.k, device_sm_count(gpu, kFallbackSmCount),
                                     gpu.compute_capability());
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
  launch_ba_gates_in_clusters(gpu, kernel, ba_gates_mma_cluster(gpu, params, args), max_cluster, config_for, args,
                              stream);
}

BaGatesMmaQuery ba_gates_mma_query(const GpuBackend& gpu, const BaGatesKernels& kernels, bool tensor_core,
                                   const BaGatesArgs& args) {
  BaGatesMmaQuery query;
  query.requested = tensor_core;
  query.kernel_present = kernels.mma.present();
  set_mma_variant(query, kernels.mma_params, gpu.compute_capability(), gpu.max_dynamic_shared_bytes());
  query.set_shape(args);
  query.aligned = args.x.address % 16 == 0 && args.weight.address % 16 == 0;
  query.sm_count = device_sm_count(gpu, kernels.fallback_sm_count);
  query.tuned_min_m = kernels.mma_tuned_min_m;
  query.twin_tuned_min_m = kernels.twin_tuned_min_m;
  return query;
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

const GuardTable& ba_gates_mma_guard() { return guard_table_of<kBaGatesMmaRejects>(); }

constexpr BaConsultedKernel kBaGatesMmaConsulted{
    .kernel = kSsmBaGatesMma,
    .what = "tensor-core",
    .lever_env = "METRALE_SSM_BA_GATES_TENSOR_CORE",
    .layout = [](const KernelParams& p) { return fmt::format("grid=(ceil(M/{}) x K split,1,1)", p.lanes); },
    .guard = ba_gates_mma_guard,
    .ran = &BaGatesPick::mma,
    .reject = &BaGatesPick::mma_reject};

}  // namespace metrale::ops
