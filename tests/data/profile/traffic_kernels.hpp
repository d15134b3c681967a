// traffic_kernels.hpp: the profiled host instantiations of traffic_kernels.cuh (compiled by
// traffic_kernels.cpp as a profiled unit), for a HostBackend's add_kernel.
#pragma once

#include <vector>

#include "metrale/host/host_kernel.hpp"

namespace metrale_test {

// Names: "coalesced_copy", "vector_copy", "strided_read", "broadcast_read", "block_reused_row",
// "counted_math" (FMAS = 8), "async_pipeline3" / "async_pipeline2" (3 and 2 stages, 8 chunks),
// "async_pipeline3_half" (3 stages, the upper half of the threads zero-fill), "cluster_swap" (clusters
// of 2, blockDim.x floats of dynamic shared memory); all with default KernelParams.
std::vector<metrale::HostKernelInfo> profiled_traffic_kernels();

}  // namespace metrale_test
