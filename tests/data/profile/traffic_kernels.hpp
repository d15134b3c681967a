// traffic_kernels.hpp: the profiled host instantiations of traffic_kernels.cuh (compiled by
// traffic_kernels.cpp as a profiled unit), for a HostBackend's add_kernel.
#pragma once

#include <vector>

#include "metrale/host/host_kernel.hpp"

namespace metrale_test {

// Names: "coalesced_copy", "vector_copy", "strided_read", "broadcast_read", "block_reused_row",
// "counted_math" (FMAS = 8); all with default KernelParams.
std::vector<metrale::HostKernelInfo> profiled_traffic_kernels();

}  // namespace metrale_test
