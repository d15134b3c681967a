// metrale/ops/ssm_ba_gates.hpp: the SSM BA-gates op: validate, guard, pick, log, launch.
// Kernel math and layouts: ARCHITECTURE.md "BA gates"; the kernels: src/ops/ssm_ba_gates/ssm_ba_gates.cuh.
// Invariants: a shape no kernel can take is an ArgumentError before anything launches; the
// launch uses the pick's kernel (the twin only when the guard says nullopt); both launchers
// pass the kernels' arguments in the kernels' order, only the grids differ.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "metrale/gpu/device_handles.hpp"
#include "metrale/gpu/gpu_backend.hpp"
#include "metrale/gpu/kernel_params.hpp"
#include "metrale/gpu/launch_config.hpp"

namespace metrale::ops {

class OpHost;  // metrale/ops/op_declaration.hpp
struct Pick;

// Threads per block, as in the parent; the reduction order depends on it, on kBaGatesLanes and
// on kBaGatesOuts.
inline constexpr std::uint32_t kBaGatesBlock = 256;
// Threads that reduce one output (two warps).
inline constexpr std::uint32_t kBaGatesLanes = 64;
inline constexpr std::uint32_t kBaGatesOuts = kBaGatesBlock / kBaGatesLanes;
// Warps per block: the width of one row of the twin's cross-warp scratch.
inline constexpr std::uint32_t kBaGatesWarps = kBaGatesBlock / 32;
// Output groups a twin thread accumulates per read of the activation row: the row is read
// ceil(ceil(N/4)/8) * 4 times per token, 12 at N = 96.
inline constexpr std::uint32_t kBaGatesGroups = 8;

// The tensor-core kernel (ssm_ba_gates_mma), shipped as 256 threads (8 warps) owning 128 tokens x
// every output (N <= 128), in clusters that split K; its guard: src/ops/ssm_ba_gates/ssm_ba_gates.hpp.
inline constexpr std::uint32_t kBaGatesMmaBlock = 256;
inline constexpr std::uint32_t kBaGatesMmaTokens = 128;
// K chunks in its shared-memory ring (its `groups`): 5 in flight while one is multiplied.
inline constexpr std::uint32_t kBaGatesMmaStages = 6;
inline constexpr std::uint32_t kBaGatesMmaMaxN = 128;

// The decode kernel (ssm_ba_gates_splitk), shipped as 256 threads owning 64 tokens x 6 outputs
// (its `lanes` and `groups`), K split over a cluster of up to 8 CTAs; its guard:
// src/ops/ssm_ba_gates/ssm_ba_gates.hpp.
inline constexpr std::uint32_t kBaGatesSplitKBlock = 256;
inline constexpr std::uint32_t kBaGatesSplitKTokens = 64;
inline constexpr std::uint32_t kBaGatesSplitKOuts = 6;

// The kernel a launch runs, and why the others did not.
struct BaGatesPick {
  KernelHandle kernel;
  // True when `kernel` is the twin.
  bool twin = false;
  // nullopt when the twin (or the tensor-core kernel) runs; the twin guard's reason when the
  // parent does.
  std::optional<std::string_view> reject;
  // True when `kernel` is ssm_ba_gates_mma; the twin guard then was not consulted.
  bool mma = false;
  // The tensor-core guard's reason when it declined; nullopt when it ran or was not consulted.
  std::optional<std::string_view> mma_reject{};
  // True when `kernel` is ssm_ba_gates_splitk (the tensor-core guard declined first; the twin
  // guard then was not consulted).
  bool decode = false;
  // The decode guard's reason when it declined; nullopt when it ran or was not consulted.
  std::optional<std::string_view> decode_reject{};
};

// The handles a target built (0 = absent) and the template parameters they were built with.
struct BaGatesKernels {
  KernelHandle parent;
  KernelHandle twin;
  KernelParams parent_params{kBaGatesBlock, kBaGatesLanes, 0};
  KernelParams twin_params{kBaGatesBlock, kBaGatesLanes, kBaGatesGroups};
  // The target's sm_count: what the guard sees when the device cannot say.
  std::uint32_t fallback_sm_count = kFallbackSmCount;
  KernelHandle mma{};
  KernelParams mma_params{kBaGatesMmaBlock, kBaGatesMmaTokens, kBaGatesMmaStages};
  // A tuning table's thresholds at the call's (n, k) (README "Tuning tables"): the smallest M the
  // twin and the tensor-core kernel take instead of the predicted ones; nullopt: the prediction.
  std::optional<std::uint32_t> twin_tuned_min_m = std::nullopt;
  std::optional<std::uint32_t> mma_tuned_min_m = std::nullopt;
  KernelHandle splitk{};
  KernelParams splitk_params{kBaGatesSplitKBlock, kBaGatesSplitKTokens, kBaGatesSplitKOuts};
};

// The levers the op reads: ssm_ba_gates_hopper, ssm_ba_gates_tensor_core and ssm_ba_gates_decode.
struct BaGatesLevers {
  bool twin = false;
  bool tensor_core = false;
  bool decode = false;
};

// x: bf16 [m][k_stride]; weight: bf16 [n][k]; a_log, dt_bias: fp32 [nv];
// gate_out: fp32 [m][gate_stride], columns [0, nv) gate and [nv, 2 nv) beta.
struct BaGatesArgs {
  DevicePtr x, weight, a_log, dt_bias, gate_out;
  std::uint32_t m = 0, n = 0, k = 0, k_stride = 0, gate_stride = 0, nv = 0, vheads_per_group = 0;
};

// Throws ArgumentError naming the argument and constraint for any shape no kernel can take:
// null or misaligned pointers (x, weight 16 bytes; the fp32 arrays 4), M/N/K == 0, K % 8,
// K_stride < K or K_stride % 8, N odd or nv != N/2, gate_stride < 2 nv, vheads_per_group == 0
// or not dividing nv, extents that overflow 64 bits, grids past CUDA's limits.
void validate_ba_gates_args(const BaGatesArgs& args);

// Checks a variant's template parameters against the kernel catalog's rules
// (target/kernel_catalog.hpp); throws ArgumentError naming the variant and the rule.
void validate_ba_gates_params(const KernelParams& params, bool twin);

// The parent's grid: (M, ceil(N / (BLOCK / LANES))).
Dim3 ba_gates_parent_grid(std::uint32_t m, std::uint32_t n, const KernelParams& params);
// The twin's grid: (M, 1, 1).
Dim3 ba_gates_twin_grid(std::uint32_t m);
// The tensor-core kernel's grid: (ceil(M / TOKENS) x cluster_blocks, 1, 1), TOKENS = params.lanes.
Dim3 ba_gates_mma_grid(std::uint32_t m, const KernelParams& params, std::uint32_t cluster_blocks = 1);
// The CTAs per token tile its launch uses on this device (a thread-block cluster splitting K;
// src/ops/ssm_ba_gates/ssm_ba_gates.hpp), from the device's SM count (kFallbackSmCount when it cannot
// say) and compute capability.
std::uint32_t ba_gates_mma_cluster(const GpuBackend& gpu, const KernelParams& params, const BaGatesArgs& args);

// The decode kernel's grid: (ceil(N / OUTS) x cluster_blocks, ceil(M / TOKENS), 1), OUTS =
// params.groups, TOKENS = params.lanes (64-bit: a grid past CUDA's limits is the launcher's error).
struct SplitKGrid {
  std::uint64_t x = 0, y = 0;
};
SplitKGrid ba_gates_splitk_grid(std::uint32_t m, std::uint32_t n, const KernelParams& params,
                                std::uint32_t cluster_blocks = 1);
// The CTAs its launch splits K over on this device (src/ops/ssm_ba_gates/ssm_ba_gates.hpp).
std::uint32_t ba_gates_splitk_cluster(const GpuBackend& gpu, const KernelParams& params, const BaGatesArgs& args);

void launch_ba_gates_parent(GpuBackend& gpu, KernelHandle kernel, const KernelParams& params, const BaGatesArgs& args,
                            std::uint64_t stream = 0);
void launch_ba_gates_twin(GpuBackend& gpu, KernelHandle kernel, const KernelParams& params, const BaGatesArgs& args,
                          std::uint64_t stream = 0);
// Also throws ArgumentError for N > 128, which the tensor-core kernel cannot take. Its K split
// (ba_gates_mma_cluster) is halved while it exceeds `max_cluster` (a measurement's cap: 1 runs
// every tile on one CTA) or the device says no such cluster fits (GpuBackend::max_active_clusters
// == 0); `max_cluster` 0 counts as 1.
void launch_ba_gates_mma(GpuBackend& gpu, KernelHandle kernel, const KernelParams& params, const BaGatesArgs& args,
                         std::uint64_t stream = 0, std::uint32_t max_cluster = kMaxClusterBlocks);

// Also throws ArgumentError for a grid past CUDA's limits (M > 65535 token tiles). Its K split is
// capped as launch_ba_gates_mma's.
void launch_ba_gates_splitk(GpuBackend& gpu, KernelHandle kernel, const KernelParams& params, const BaGatesArgs& args,
                            std::uint64_t stream = 0, std::uint32_t max_cluster = kMaxClusterBlocks);

// The op: validates, runs the guards with the device's SM count (the tensor-core guard first,
// then the decode kernel's, then the twin's), picks, logs each verdict once per slot and launches. Throws ArgumentError
// for bad arguments, BackendError when the picked kernel is absent.
BaGatesPick ssm_ba_gates(GpuBackend& gpu, const BaGatesKernels& kernels, const BaGatesLevers& levers,
                         const BaGatesArgs& args, std::uint64_t stream = 0);
// The same with the tensor-core lever off: `requested` is the ssm_ba_gates_hopper lever.
BaGatesPick ssm_ba_gates(GpuBackend& gpu, const BaGatesKernels& kernels, bool requested, const BaGatesArgs& args,
                         std::uint64_t stream = 0);

// The op on a runtime (or any OpHost): its declared kernels and levers, the guards or the role
// the caller forces ("parent", "twin", "tensor_core" or "mma", "decode" or "splitk"; "" lets the
// guards pick). A forced
// role keeps the op's validation and reports reject kForcedKernelReason for the parent; it throws
// KernelChoiceError, before anything launches, when the target did not build it.
BaGatesPick ssm_ba_gates(const OpHost& host, const BaGatesArgs& args, std::uint64_t stream = 0,
                         std::string_view role = {});
// The generic pick (ops/op_declaration.hpp) of a typed one: the role, the kernel, the verdicts.
Pick to_pick(const BaGatesPick& pick, bool forced);
// The op's kernels on a runtime as loaded now (absent while a background twin still builds),
// with the parameters the target ships them with (the defaults above for one it does not ship).
BaGatesKernels ba_gates_kernels(const OpHost& host);

}  // namespace metrale::ops
