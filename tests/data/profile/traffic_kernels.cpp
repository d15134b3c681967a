// traffic_kernels.cpp: traffic_kernels.cuh compiled as a profiled host unit
// (tests/cmake/profile.cmake), so a HostBackend in a profile records its accesses.
#include "data/profile/traffic_kernels.hpp"

#include <string>
#include <vector>

// clang-format off
#include "metrale/host/cuda_host_prelude.hpp"
#include "data/profile/traffic_kernels.cuh"
// clang-format on

namespace metrale_test {

std::vector<metrale::HostKernelInfo> profiled_traffic_kernels() {
  using namespace metrale_test_kernels;
  using metrale::make_host_kernel;
  return {make_host_kernel<&coalesced_copy>("coalesced_copy", {}),
          make_host_kernel<&vector_copy>("vector_copy", {}),
          make_host_kernel<&strided_read>("strided_read", {}),
          make_host_kernel<&broadcast_read>("broadcast_read", {}),
          make_host_kernel<&block_reused_row>("block_reused_row", {}),
          make_host_kernel<&counted_math<8>>("counted_math", {})};
}

}  // namespace metrale_test
