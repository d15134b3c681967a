// profile/occupancy.hpp: how many blocks of a kernel fit on one SM, from its threads,
// registers and static shared memory (the arch's ptxas report) and the arch's per-SM limits.
// Pure. Used for the profile's occupancy column and for the size of a wave (sm_count x blocks
// per SM), the unit a profile samples in.
#pragma once

#include <cstdint>
#include <optional>

#include "metrale/gpu/compute_capability.hpp"

namespace metrale {

struct SmLimits {
  std::uint32_t max_threads = 2048;
  std::uint32_t max_blocks = 32;
  std::uint32_t registers = 65536;
  std::uint32_t shared_bytes = 228 * 1024;
};

// The per-SM limits of a compute capability (CUDA's occupancy tables); nullopt: Hopper's.
SmLimits sm_limits(const std::optional<ComputeCapability>& capability);

struct Occupancy {
  std::uint32_t blocks_per_sm = 0;
  double fraction = 0;  // resident warps / the SM's maximum warps
};

// registers: per thread, nullopt when unknown (then only threads and blocks limit).
Occupancy occupancy(const SmLimits& limits, std::uint32_t threads_per_block, std::optional<int> registers,
                    std::uint32_t shared_bytes);

}  // namespace metrale
