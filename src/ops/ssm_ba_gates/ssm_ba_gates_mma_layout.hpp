// ops/ssm_ba_gates_mma_layout.hpp: the tensor-core BA kernel's shared memory as the host sees
// it: the bytes a launch asks for, the limit a device grants, and how many CTAs (a thread-block
// cluster) split each token tile's K range. Pure functions, apart from the
// guard (ssm_ba_gates_mma_guard.hpp), so the kernel catalog's rule and the fuzzers' parser
// library can size a variant without the guard's logging.
// Invariant: ba_gates_mma_shared_bytes equals src/ops/ssm_ba_gates/ssm_ba_gates_mma.cuh's function of the
// same name for every shape a launch can have (kernels_ba_gates_mma_layout_test).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "metrale/gpu/compute_capability.hpp"

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
