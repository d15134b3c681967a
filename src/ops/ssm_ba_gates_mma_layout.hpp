// ops/ssm_ba_gates_mma_layout.hpp: the tensor-core BA kernel's shared memory as the host sees
// it: the bytes a launch asks for, and the limit a device grants. Pure functions, apart from the
// guard (ssm_ba_gates_mma_guard.hpp), so the kernel catalog's rule and the fuzzers' parser
// library can size a variant without the guard's logging.
// Invariant: ba_gates_mma_shared_bytes equals templates/ssm_ba_gates_mma.cuh's function of the
// same name for every shape a launch can have (kernels_ba_gates_mma_layout_test).
#pragma once

#include <cstdint>
#include <optional>

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

}  // namespace metrale::ops
