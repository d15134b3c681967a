// ops/ssm_ba_gates/ssm_ba_gates.hpp: the SSM BA-gates op's private interface (its arguments,
// launchers and typed entry are public: metrale/ops/ssm_ba_gates.hpp): the Hopper twin's guard,
// the index mappings parent and twin share, the tensor-core kernel's guard and shared-memory
// layout, the decode kernel's guard, and the CPU references its check compares the kernels with.
// Each section below states its own invariants.
// Past ~400 lines: four kernels' guards (each a reason list, a query and a pick) share the op's
// pick type, so they are declared together; their definitions are one file per kernel.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hardware/kernel_catalog.hpp"
#include "metrale/gpu/compute_capability.hpp"
#include "metrale/gpu/device_handles.hpp"
#include "metrale/gpu/gpu_backend.hpp"
#include "metrale/gpu/kernel_launch.hpp"
#include "metrale/gpu/launch_config.hpp"
#include "metrale/ops/op_declaration.hpp"
#include "metrale/ops/ssm_ba_gates.hpp"
#include "ops/log_once.hpp"
#include "ops/op_guard_table.hpp"
#include "ops/op_verdict.hpp"

// ---- The kernels: their names, template name expressions and files ({BLOCK, LANES} and
// {BLOCK, LANES, GROUPS}), their parameter rules and their catalog declarations.
namespace metrale::ops {

// The op's roles (its declaration lists them in this order, and its call reads them there).
inline constexpr std::string_view kBaGatesParentRole = "parent";
inline constexpr std::string_view kBaGatesTwinRole = "twin";
inline constexpr std::string_view kBaGatesTensorCoreRole = "tensor_core";
inline constexpr std::string_view kBaGatesDecodeRole = "decode";
inline constexpr std::string_view kBaGatesParentKernel = kSsmBaGates;
inline constexpr std::string_view kBaGatesTwinKernel = kSsmBaGatesHopper;
inline constexpr std::string_view kBaGatesParentTemplate = "metrale::kernels::dense_gemm_ba_gates_prefill";
inline constexpr std::string_view kBaGatesTwinTemplate = "metrale::kernels::dense_gemm_ba_gates_prefill_hopper";
inline constexpr std::string_view kBaGatesTemplateFile = "ssm_ba_gates.cuh";
// The tensor-core kernel: {BLOCK, TOKENS} (TOKENS is KernelParams::lanes).
inline constexpr std::string_view kBaGatesMmaKernel = kSsmBaGatesMma;
inline constexpr std::string_view kBaGatesMmaTemplate = "metrale::kernels::ssm_ba_gates_mma";
inline constexpr std::string_view kBaGatesMmaTemplateFile = "ssm_ba_gates_mma.cuh";
// The decode kernel: {BLOCK, TOKENS, OUTS} (KernelParams::block, lanes, groups).
inline constexpr std::string_view kBaGatesSplitKKernel = kSsmBaGatesSplitK;
inline constexpr std::string_view kBaGatesSplitKTemplate = "metrale::kernels::ssm_ba_gates_splitk";
inline constexpr std::string_view kBaGatesSplitKTemplateFile = "ssm_ba_gates_splitk.cuh";

std::optional<KernelParamsProblem> check_ssm_ba_gates(const KernelParams& p);
std::optional<KernelParamsProblem> check_ssm_ba_gates_hopper(const KernelParams& p);
std::optional<KernelParamsProblem> check_ssm_ba_gates_mma(const KernelParams& p);
std::optional<KernelParamsProblem> check_ssm_ba_gates_splitk(const KernelParams& p);
// Pushes the kernels' arguments, which every BA kernel takes in this order (ssm_ba_gates.cuh).
KernelLaunch& push_ba_gates_args(KernelLaunch& launch, const BaGatesArgs& args);

// The launch config of the largest cluster from `wanted` down (halving) that is at most
// `max_cluster` (0 counts as 1) and that the device does not say it cannot schedule (another
// context holding SMs, a partitioned GPU): config_for(cluster) makes a cluster's config. Why:
// a cluster that does not fit fails the launch instead of running slower.
template <typename ConfigFor>
LaunchConfig fitted_cluster_config(GpuBackend& gpu, KernelHandle kernel, std::uint32_t wanted,
                                   std::uint32_t max_cluster, const ConfigFor& config_for) {
  std::uint32_t cluster = wanted;
  LaunchConfig config = config_for(cluster);
  while (cluster > 1 && (cluster > max_cluster || gpu.max_active_clusters(kernel, config) == 0U)) {
    cluster /= 2;
    config = config_for(cluster);
  }
  return config;
}

// Launches the BA kernel `kernel` over `args` with fitted_cluster_config's config (the tensor-core
// and the decode kernel: both take the op's argument list, in clusters).
template <typename ConfigFor>
void launch_ba_gates_in_clusters(GpuBackend& gpu, KernelHandle kernel, std::uint32_t wanted, std::uint32_t max_cluster,
                                 const ConfigFor& config_for, const BaGatesArgs& args, std::uint64_t stream) {
  const LaunchConfig config = fitted_cluster_config(gpu, kernel, wanted, max_cluster, config_for);
  KernelLaunch launch(gpu, kernel);
  launch.grid(config.grid)
      .block(config.block)
      .cluster(config.cluster_blocks)
      .dynamic_shared(config.dynamic_shared_bytes);
  push_ba_gates_args(launch, args).launch(stream);
}

// Adds the parent, the twin, the tensor-core and the decode kernel to `catalog`.
void add_ssm_ba_gates_kernels(KernelCatalog& catalog);
// The declaration's tensor rules (names, nulls, optional tensors, alignments) on a typed call
// (validate_*_args), through the op's argument list (ssm_ba_gates_op.cpp; ArgFields::require_library_tensors).
void require_ssm_ba_gates_tensors(const BaGatesArgs& args);

// The op's check hook (OpDeclaration::check, ssm_ba_gates_check.cpp).
std::vector<CheckResult> ssm_ba_gates_check(const OpContext& context, const CheckOptions& options);
// The profile's hook (OpDeclaration::profile, ssm_ba_gates_check.cpp).
std::shared_ptr<const OpProfile> ssm_ba_gates_profile();

}  // namespace metrale::ops

// ---- When the Hopper BA-gates twin
// (dense_gemm_ba_gates_prefill_hopper) takes a launch instead of the parent
// (dense_gemm_ba_gates_prefill), and the once-per-slot log of that choice.
// Invariants:
// - ba_gates_pick returns the twin only when ssm_ba_gates_hopper_reject returns nullopt;
// - every reason the guard returns is in kBaGatesRejects, in the order the guard tests them,
//   and has its own log slot;
// - everything here but ba_gates_log is pure.
// The twin runs one block per token, so its grid is the token count; below
// kBaGatesMinCtasPerSm x sm_count tokens (the batched decode) it declines and the parent, which
// computes the same bits, runs.
namespace metrale::ops {

// Tokens per SM the twin needs before it takes a launch (one CTA per token).
inline constexpr std::uint32_t kBaGatesMinCtasPerSm = kMinCtasPerSm;

// The token-count guard's reason, named so tests can match it.
inline constexpr std::string_view kBaGatesTooFewTokens = "too few tokens to fill the device at one CTA per token";

// Every reason ssm_ba_gates_hopper_reject can return, in the order it tests them.
inline constexpr std::array<std::string_view, 6> kBaGatesRejects = {
    "not requested",
    "kernel absent from this image (kernels/hopper only)",
    "empty BA projection",
    "K is not a multiple of 8 (the uint4 K sweep would drop a tail)",
    "K_stride < K: the activation row is shorter than the reduction",
    kBaGatesTooFewTokens,
};

// Once-flags ba_gates_log keeps: one per reason, plus the twin's.
inline constexpr std::size_t kBaGatesLogSlots = kBaGatesRejects.size() + 1;

// The smallest token count the twin accepts with `sm_count` SMs (0 counts as 1); saturating.
std::uint32_t ba_gates_min_tokens(std::uint32_t sm_count);

// The token floor the twin's guard holds M to: a tuning table's measured threshold at this shape
// when there is one (OpContext::tuned_min_m), else ba_gates_min_tokens(sm_count). Pure.
std::uint32_t ba_gates_twin_floor(std::uint32_t sm_count, std::optional<std::uint32_t> tuned_min_m);

// Why the twin does not run; nullopt means it runs. Tested in the order of kBaGatesRejects; the
// token floor is ba_gates_twin_floor's.
std::optional<std::string_view> ssm_ba_gates_hopper_reject(bool requested, bool kernel_present, std::uint32_t m,
                                                           std::uint32_t n, std::uint32_t k, std::uint32_t k_stride,
                                                           std::uint32_t sm_count,
                                                           std::optional<std::uint32_t> tuned_min_m = std::nullopt);

// The one place the parent/twin rule lives: the twin exactly when the guard says nullopt, or when
// the parent cannot launch the shape (`parent_launchable` false: its grid.y, ceil(N / outputs per
// block), is past CUDA's 65535) and the guard declined only for the lever or the token floor;
// the twin's grid is (M, 1, 1) whatever N is.
BaGatesPick ba_gates_pick(bool requested, KernelHandle parent, KernelHandle twin, std::uint32_t m, std::uint32_t n,
                          std::uint32_t k, std::uint32_t k_stride, std::uint32_t sm_count,
                          bool parent_launchable = true, std::optional<std::uint32_t> tuned_min_m = std::nullopt);

// The slot a verdict logs under, or nullopt when it is not logged (lever off: the parent is
// the expected outcome). Pure, so tests replay call sequences.
std::optional<OpLogSlot> ba_gates_log_slot(const BaGatesPick& pick, bool requested);

// The line the verdict logs if its slot is still unclaimed in `said` (claiming it), naming the
// M it was first reached at; nullopt otherwise.
std::optional<std::string> ba_gates_log_line(const BaGatesPick& pick, bool requested, std::uint32_t m, OnceSlots& said);

// The guard's table (kBaGatesRejects) and the process-wide log slots derived from it.
const GuardTable& ba_gates_guard();
// The process-wide once-flags of ba_gates_log.
OnceSlots& ba_gates_log_slots();

// Logs the verdict through metrale::logger() at info, once per process per slot.
void ba_gates_log(const BaGatesPick& pick, bool requested, std::uint32_t m);

}  // namespace metrale::ops

// ---- The index mappings the BA-gates parent and twin must
// share (src/ops/ssm_ba_gates/ssm_ba_gates.cuh), as pure functions the tests check on the CPU.
// Invariants: the parent's smem[local_out * 2 + lane / 32] and the twin's
// red[g * WARPS + threadIdx.x / 32] name the same warp because threadIdx.x / 32 ==
// local_out * 2 + lane / 32; an output's beta lands at nv + vh, its gate at vh.
namespace metrale::ops {

// The kv indices (16-byte vectors) lane `lane` accumulates, in order: kv = lane, lane + 64, ...
// below k_vec. The order is the reduction order.
std::vector<std::uint32_t> ba_gates_lane_kv(std::uint32_t lane, std::uint32_t k_vec);

// The output a thread owns: group * kBaGatesOuts + local_out (the parent's group is
// blockIdx.y; the twin's is g0 + g, walking 0 .. ceil(N/4) in tiles of kBaGatesGroups).
std::uint32_t ba_gates_output(std::uint32_t group, std::uint32_t local_out);

// The block-wide warp that holds lane `lane` of output `local_out`.
std::uint32_t ba_gates_warp(std::uint32_t local_out, std::uint32_t lane);

// The two warp partials summed for output `local_out`, in order (even, odd).
std::pair<std::uint32_t, std::uint32_t> ba_gates_cross_warp_pair(std::uint32_t local_out);

// Where output n lands in its token's [gate(nv), beta(nv)] row: within each group of
// 2 * vheads_per_group outputs the first half is beta, the second gate.
struct BaGatesSlot {
  bool beta = false;
  std::uint32_t vh = 0;
  // The column in the gate row: nv + vh for beta, vh for gate.
  [[nodiscard]] constexpr std::uint32_t column(std::uint32_t nv) const { return beta ? nv + vh : vh; }
  friend constexpr bool operator==(const BaGatesSlot&, const BaGatesSlot&) = default;
};
BaGatesSlot ba_gates_slot(std::uint32_t n, std::uint32_t vheads_per_group);

// How many times the twin reads a token's activation row: ceil(ceil(N / outs) / groups) * outs.
std::uint32_t ba_gates_twin_row_reads(std::uint32_t n, std::uint32_t outs, std::uint32_t groups);

}  // namespace metrale::ops

// ---- The tensor-core BA kernel's shared memory as the host sees
// it: the bytes a launch asks for, the limit a device grants, and how many CTAs (a thread-block
// cluster) split each token tile's K range. Pure functions, kept apart from the guard (the next
// section), so the kernel's parameter rule can size a variant without the guard's logging.
// Invariant: ba_gates_mma_shared_bytes equals ssm_ba_gates_mma.cuh's function of the same name for every shape a launch
// can have (kernels_ba_gates_mma_layout_test).
namespace metrale::ops {

// The dynamic shared memory ssm_ba_gates_mma<block, tokens, stages> needs at N outputs: `stages`
// K chunks of 64 for (tokens + N rounded up to whole tiles of 16) rows of 72 bf16 (64 plus a
// 16-byte pad), or the fp32 accumulator tile [tokens][132] that reuses them once the K loop is
// done, whichever is larger. The template's ba_gates_mma_shared_bytes is the same function (a
// unit test compares them); 64-bit, so no shape overflows it. Pure.
std::uint64_t ba_gates_mma_shared_bytes(std::uint32_t tokens, std::uint32_t n, std::uint32_t stages);

// What the guard takes as the device's limit: the device's answer, else its capability's, else
// 48 KiB. Pure.
std::uint64_t ba_gates_mma_shared_limit(std::optional<std::uint32_t> device_limit,
                                        std::optional<ComputeCapability> compute_capability);

// CTAs per token tile: each takes a contiguous 1/s of the K chunks (64 wide) and the cluster's
// CTAs sum their accumulators through each other's shared memory before the epilogue. The largest
// s in {1, 2, 4, 8} with s <= the K chunks and ceil(M / tokens) x s <= sm_count (one block per
// SM at the shipped shared memory, so one wave); 1 below sm_90, with no compute capability, or
// when the token tiles alone fill the SMs.
// Why: the weight is read from L2 once per token tile, so larger tiles read it fewer times, but
// at M 8192 the 64 tiles of 128 tokens would leave half of an H200's 132 SMs idle; split in two
// along K they fill 128 SMs, each streaming half the weight. At small M the split spreads one
// tile's K pass over up to 8 SMs instead of one. Pure.
std::uint32_t ba_gates_mma_cluster_blocks(std::uint32_t m, std::uint32_t tokens, std::uint32_t k,
                                          std::uint32_t sm_count, std::optional<ComputeCapability> compute_capability);

// The shape constant of ssm_ba_gates_mma: N maps to its TILES template argument, ceil(N / 16)
// (KernelParams::shape), or stays on the generic form (tiles 0) with a named reason.
inline constexpr std::string_view kMmaShapeNoOutputs = "N = 0 has no output tiles";
inline constexpr std::string_view kMmaShapeTooWide = "N > 128 is past the kernel's 8 output tiles";
struct MmaShapeChoice {
  std::uint32_t tiles = 0;   // the template argument; 0: generic
  std::string_view refusal;  // why generic; empty when tiles != 0
};
MmaShapeChoice ba_gates_mma_shape_for(std::uint32_t n);

}  // namespace metrale::ops

// ---- When the tensor-core BA-gates kernel (ssm_ba_gates_mma)
// takes a launch, ahead of the seeds' twin/parent pick, and the once-per-slot log of that choice.
// Invariants:
// - ssm_ba_gates_mma_reject is pure and tests its reasons in the order of kBaGatesMmaRejects;
// - ba_gates_pick_with_mma picks ssm_ba_gates_mma exactly when that guard says none, and
//   otherwise returns ba_gates_pick's verdict unchanged (kernel, twin, reject), so with the
//   tensor-core lever off every decision is the seeds';
// - every reason has its own log slot, and nothing is logged when the lever is off.
// The kernel computes the same gates as the parent but not the same bytes (another summation
// order; relative Frobenius error against the float64 oracle below 1e-5).
namespace metrale::ops {

// bf16 wmma exists from sm_80.
inline constexpr ComputeCapability kBaGatesMmaMinCc{8, 0};

inline constexpr std::string_view kBaGatesMmaTooFewTokens =
    "too few tokens (fewer blocks, token tiles x K splits, than a twelfth of the SMs, where the parent is faster)";
// SMs per block the kernel needs at least: 1 block per 12 SMs. Fitted on an H200 (132 SMs,
// 2026-11-30, BENCHMARKS.md) with the kernel before clusters: its time was ~75-86 us from 1 to 128
// tiles (each block one latency-bound pass over all of K), the parent's grows ~0.1 us per token;
// they crossed near 640 tokens (10 tiles): 78 vs 40 us at 264 tokens, 77 vs 116 us at 1024.
// Carried to clusters on the assumption (not yet measured) that a CTA's time follows its share of
// the K chunks, so a tile split s ways counts as s blocks.
inline constexpr std::uint32_t kBaGatesMmaSmsPerTile = 12;
// Every reason ssm_ba_gates_mma_reject can return, in the order it tests them.
inline constexpr std::array<std::string_view, 10> kBaGatesMmaRejects = {
    "not requested",
    "kernel absent from this image",
    "compute capability below 8.0 or unknown (bf16 tensor-core MMA needs sm_80)",
    "empty BA projection",
    "N > 128 (a block holds at most 8 output tiles of 16)",
    "K or K_stride is not a multiple of 8 (the tiles are copied in 16-byte vectors)",
    "K_stride < K: the activation row is shorter than the reduction",
    "x or weight is not 16-byte aligned",
    "its K stages need more shared memory than the device grants a block",
    kBaGatesMmaTooFewTokens,
};

// Once-flags the tensor-core verdict keeps (ba_gates_consulted_log): one per reason, plus the kernel's own.
inline constexpr std::size_t kBaGatesMmaLogSlots = kBaGatesMmaRejects.size() + 1;

// What every consulted kernel's guard looks at (the tensor-core and the decode kernel's add
// their own): its lever, whether the target built it, the device and the call's shape.
struct BaGatesConsultedQuery {
  bool requested = false;  // the kernel's lever (ssm_ba_gates_tensor_core, ssm_ba_gates_decode)
  bool kernel_present = false;
  std::optional<ComputeCapability> compute_capability;
  std::uint32_t m = 0, n = 0, k = 0, k_stride = 0;
  std::uint32_t sm_count = 0;

  void set_shape(const BaGatesArgs& shape) {
    m = shape.m;
    n = shape.n;
    k = shape.k;
    k_stride = shape.k_stride;
  }
};

// What the tensor-core guard looks at (BaGatesConsultedQuery: the lever, the device, the shape).
struct BaGatesMmaQuery : BaGatesConsultedQuery {
  bool aligned = true;  // x and weight 16-byte aligned
  std::uint32_t tokens_per_block = kBaGatesMmaTokens;
  std::uint32_t stages = kBaGatesMmaStages;
  // The device's opt-in limit per block (GpuBackend::max_dynamic_shared_bytes, else the
  // capability's, else 48 KiB).
  std::uint64_t max_shared_bytes = kDefaultSharedBytes;
  // The tuning table's thresholds at this shape (BaGatesKernels): the tensor-core kernel's, which
  // ba_gates_mma_min_m answers in place of its prediction, and the twin's, which the combined
  // pick hands to ba_gates_pick. nullopt: the prediction.
  std::optional<std::uint32_t> tuned_min_m = std::nullopt;
  std::optional<std::uint32_t> twin_tuned_min_m = std::nullopt;
};

// The smallest M the kernel takes: tokens_per_block x ceil(ceil(sm_count / kBaGatesMmaSmsPerTile)
// / max_cluster_blocks) (sm_count 0 counts as 1), saturating, where max_cluster_blocks is the
// most CTAs a tile may be split into (ba_gates_mma_cluster_blocks with the SMs to spare: 8 on
// sm_90+ when K has 8 chunks, 1 below sm_90): 256 on 132 SMs at K 5120 with 128-token tiles,
// 1408 without clusters. A judgement, not a contract: below it the seeds' kernels, one block per
// token, finish first.
std::uint32_t ba_gates_mma_min_tokens(std::uint32_t sm_count, std::uint32_t tokens_per_block = kBaGatesMmaTokens,
                                      std::uint32_t max_cluster_blocks = 1);
// The most CTAs ba_gates_mma_cluster_blocks splits one token tile into at this K and capability.
std::uint32_t ba_gates_mma_max_cluster_blocks(std::uint32_t k, std::optional<ComputeCapability> compute_capability);
// The smallest M the guard's last rule lets through for the query's device, variant and K (its
// m is ignored): what explain reports.
std::uint32_t ba_gates_mma_min_m(const BaGatesMmaQuery& query);

// Fills what the query takes from the kernel variant and the device: the token tile (`lanes`),
// the stages (`groups`), the compute capability and the shared memory limit
// (ba_gates_mma_shared_limit). The op, the C API's explain and the CLI's explain all use it.
void set_mma_variant(BaGatesMmaQuery& query, const KernelParams& mma,
                     std::optional<ComputeCapability> compute_capability,
                     std::optional<std::uint32_t> device_shared_limit);

// Why the tensor-core kernel does not run; nullopt means it runs. Pure.
std::optional<std::string_view> ssm_ba_gates_mma_reject(const BaGatesMmaQuery& query);

// The whole BA decision: ssm_ba_gates_mma when its guard says none (query.kernel_present is
// taken from `mma`), else ba_gates_pick(twin_requested, parent, twin, ...) exactly, with the
// tensor-core guard's reason in mma_reject.
BaGatesPick ba_gates_pick_with_mma(const BaGatesMmaQuery& query, KernelHandle mma, bool twin_requested,
                                   KernelHandle parent, KernelHandle twin, bool parent_launchable = true);

// A kernel whose guard the BA pick consults beside the twin's (the tensor-core and the decode
// kernel): how its log lines name it, its guard's table, and where the pick says it ran or why not.
struct BaConsultedKernel {
  std::string_view kernel;                               // the catalog's name
  std::string_view what;                                 // "tensor-core", "decode"
  std::string_view lever_env;                            // its lever's environment variable
  std::string (*layout)(const KernelParams&);            // the line's tail: its tile and grid
  const GuardTable& (*guard)();                          // its reasons and process-wide log slots
  bool BaGatesPick::*ran;                                // &BaGatesPick::mma, &BaGatesPick::decode
  std::optional<std::string_view> BaGatesPick::*reject;  // its guard's reason in the pick
};

// The tensor-core kernel (ssm_ba_gates_mma.cpp) and the decode kernel (ssm_ba_gates_splitk.cpp).
extern const BaConsultedKernel kBaGatesMmaConsulted;
extern const BaConsultedKernel kBaGatesDecodeConsulted;

// The line of a consulted kernel's verdict, logged when its slot is first claimed: the kernel,
// its lever, M, the variant's block and token tile and its layout when it ran (`ran`), else why
// not (`reject`, which a claimed refusal has).
std::string ba_gates_consulted_text(const BaConsultedKernel& kernel, bool ran, std::optional<std::string_view> reject,
                                    std::uint32_t m, const KernelParams& params);

// The slot a consulted kernel's verdict logs under, or nullopt (lever off, not consulted, or a
// reason not listed).
std::optional<OpLogSlot> ba_gates_consulted_log_slot(const BaConsultedKernel& kernel, const BaGatesPick& pick,
                                                     bool requested);

// The line its verdict logs if the slot is still unclaimed in `said` (claiming it); `params` is
// the variant the launch uses (its block and token tile are in the line).
std::optional<std::string> ba_gates_consulted_log_line(const BaConsultedKernel& kernel, const BaGatesPick& pick,
                                                       bool requested, std::uint32_t m, const KernelParams& params,
                                                       OnceSlots& said);

// Logs its verdict through metrale::logger() at info, once per process per slot.
void ba_gates_consulted_log(const BaConsultedKernel& kernel, const BaGatesPick& pick, bool requested, std::uint32_t m,
                            const KernelParams& params);

// The tensor-core guard's table (kBaGatesMmaRejects) and the process-wide log slots derived from it.
const GuardTable& ba_gates_mma_guard();

// The tensor-core guard's query for these arguments on `gpu` (SM count, compute capability).
BaGatesMmaQuery ba_gates_mma_query(const GpuBackend& gpu, const BaGatesKernels& kernels, bool tensor_core,
                                   const BaGatesArgs& args);

}  // namespace metrale::ops

// ---- When the decode kernel (ssm_ba_gates_splitk) takes a launch: after the tensor-core guard
// declined, ahead of the seeds' twin/parent pick; its K split, and the once-per-slot log.
// Invariants:
// - ssm_ba_gates_decode_reject is pure and tests its reasons in the order of kBaGatesDecodeRejects;
// - ba_gates_pick_with_decode returns a tensor-core pick unchanged, picks ssm_ba_gates_splitk
//   exactly when its guard says none, and otherwise returns the seeds' pick with the decode
//   guard's reason added, so with the decode lever off every decision is what it was without it;
// - every reason has its own log slot, and nothing is logged when the lever is off.
// The kernel computes the same gates as the parent, not the same bytes (each cluster rank sums
// its K range; the ranks are added in rank order).
namespace metrale::ops {

// Distributed shared memory and cluster launches exist from sm_90.
inline constexpr ComputeCapability kBaGatesDecodeMinCc = kMinClusterCapability;
// Vectors of 8 K elements each CTA of a split takes at least: one per lane of a warp.
inline constexpr std::uint32_t kBaGatesDecodeMinVectorsPerCta = 32;

inline constexpr std::string_view kBaGatesDecodeNoSplit =
    "no K split fits (K < 512, or the output columns alone fill the SMs): the parent is as fast";
inline constexpr std::string_view kBaGatesDecodeTooManyTokens =
    "more tokens than the kernel's token tile (past decode sizes every tile re-reads the weight)";
// Every reason ssm_ba_gates_decode_reject can return, in the order it tests them.
inline constexpr std::array<std::string_view, 8> kBaGatesDecodeRejects = {
    "not requested",
    "kernel absent from this image",
    "compute capability below 9.0 or unknown (the K split needs thread-block clusters)",
    "empty BA projection",
    "K or K_stride is not a multiple of 8 (the rows are read in 16-byte vectors)",
    "K_stride < K: the activation row is shorter than the reduction",
    kBaGatesDecodeNoSplit,
    kBaGatesDecodeTooManyTokens,
};

// Once-flags the decode verdict keeps (ba_gates_consulted_log): one per reason, plus the kernel's own.
inline constexpr std::size_t kBaGatesDecodeLogSlots = kBaGatesDecodeRejects.size() + 1;

// What the decode guard looks at (BaGatesConsultedQuery: the lever, the device, the shape).
struct BaGatesDecodeQuery : BaGatesConsultedQuery {
  std::uint32_t tokens_per_tile = kBaGatesSplitKTokens;  // the variant's `lanes`
  std::uint32_t outs_per_block = kBaGatesSplitKOuts;     // the variant's `groups`
};

// CTAs per output column (a cluster splitting K): the largest s in {1, 2, 4, 8} with at least
// kBaGatesDecodeMinVectorsPerCta vectors of K per CTA and ceil(N / outs) x ceil(M / tokens) x s
// <= sm_count (one wave: each CTA streams its 1/s of its columns' weight once); 1 below sm_90,
// with no compute capability, or a zero tile. Why: the weight read is the op's compulsory
// traffic at decode sizes; spread over s x the columns' CTAs it is on every SM at once. Pure.
std::uint32_t ba_gates_splitk_cluster_blocks(std::uint32_t m, std::uint32_t n, std::uint32_t k, std::uint32_t tokens,
                                             std::uint32_t outs, std::uint32_t sm_count,
                                             std::optional<ComputeCapability> compute_capability);

// The dynamic shared memory of ssm_ba_gates_splitk<block, tokens, outs>: its partials, tokens x
// outs floats. Pure.
std::uint64_t ba_gates_splitk_shared_bytes(std::uint32_t tokens, std::uint32_t outs);

// The largest M the guard's last rule lets through: the variant's token tile. Pure.
std::uint32_t ba_gates_decode_max_m(const BaGatesDecodeQuery& query);

// Why the decode kernel does not run; nullopt means it runs. Pure.
std::optional<std::string_view> ssm_ba_gates_decode_reject(const BaGatesDecodeQuery& query);

// The pick after the tensor-core guard (`after_mma`, ba_gates_pick_with_mma's): unchanged when
// the tensor-core kernel runs; ssm_ba_gates_splitk when the decode guard says none
// (query.kernel_present is taken from `splitk`; the tensor-core reason kept); else `after_mma`
// with the decode guard's reason in decode_reject.
BaGatesPick ba_gates_pick_with_decode(const BaGatesPick& after_mma, const BaGatesDecodeQuery& query,
                                      KernelHandle splitk);

// The decode guard's query for these arguments on `gpu` (SM count, compute capability).
BaGatesDecodeQuery ba_gates_decode_query(const GpuBackend& gpu, const BaGatesKernels& kernels, bool decode,
                                         const BaGatesArgs& args);
// The same from a variant and a device's figures (explain without a device).
BaGatesDecodeQuery ba_gates_decode_query(const KernelParams& splitk, bool requested, bool kernel_present,
                                         std::optional<ComputeCapability> compute_capability, std::uint32_t sm_count,
                                         const BaGatesArgs& shape);

// The decode guard's table (kBaGatesDecodeRejects) and its process-wide log slots (its verdict
// logs through ba_gates_consulted_log with kBaGatesDecodeConsulted).
const GuardTable& ba_gates_decode_guard();

}  // namespace metrale::ops

// ---- CPU references of the SSM BA-gates op.
// Invariants: ssm_ba_gates_reference keeps the kernels' operation order exactly (lane-strided
// kv sweep with fmaf in element order, the 16/8/4/2/1 butterfly per warp, warp_even + warp_odd,
// the same float gate functions), so its accumulations and outputs equal a host run of either
// kernel bit for bit; ssm_ba_gates_oracle is an independent float64 computation.
// Inputs are bf16 bits; layouts as in metrale/ops/ssm_ba_gates.hpp.
namespace metrale::ref {

struct BaGatesRefShape {
  std::uint32_t m = 0, n = 0, k = 0, k_stride = 0, gate_stride = 0, nv = 0, vheads_per_group = 0;
};

struct BaGatesRefInputs {
  std::span<const std::uint16_t> x;       // [m][k_stride]
  std::span<const std::uint16_t> weight;  // [n][k]
  std::span<const float> a_log;           // [nv]
  std::span<const float> dt_bias;         // [nv]
};

// acc[token][n] in the kernels' order; [m][n].
std::vector<float> ssm_ba_gates_reference_acc(const BaGatesRefInputs& in, const BaGatesRefShape& shape);

// Writes columns [0, 2 nv) of each gate_out row (stride gate_stride); leaves the rest alone.
void ssm_ba_gates_reference(const BaGatesRefInputs& in, const BaGatesRefShape& shape, std::span<float> gate_out);

// The float64 oracle: [m][2 nv] (gate then beta), plain summation and double gate math.
std::vector<double> ssm_ba_gates_oracle(const BaGatesRefInputs& in, const BaGatesRefShape& shape);

// The float gate math the kernels use (templates/metrale_arith.cuh), for the reference.
float ba_gates_sigmoid(float x);
float ba_gates_decay(float acc, float a_log, float dt_bias);

}  // namespace metrale::ref
