// traffic_kernels.cpp: traffic_kernels.cuh compiled as a profiled host unit
// (tests/cmake/profile.cmake), so a HostBackend in a profile records its accesses.
#include "data/profile/traffic_kernels.hpp"

#include <string>
#include <vector>

// The kernels (and metrale_arith.cuh, which they include) sit inside a namespace of their own:
// the unit tests also link plain instantiations of metrale_arith.cuh's inline functions, which
// must not merge with these profiled ones (as in src/host/profiled_builtin_kernels.cpp).
// clang-format off
#include "metrale/host/cuda_host_prelude.hpp"
namespace metrale_profiled_test {
#include "data/profile/traffic_kernels.cuh"
}  // namespace metrale_profiled_test
// clang-format on

namespace metrale_test {

std::vector<metrale::HostKernelInfo> profiled_traffic_kernels() {
  using namespace metrale_profiled_test::metrale_test_kernels;
  using metrale::make_host_kernel;
  return {make_host_kernel<&coalesced_copy>("coalesced_copy", {}),
          make_host_kernel<&vector_copy>("vector_copy", {}),
          make_host_kernel<&strided_read>("strided_read", {}),
          make_host_kernel<&broadcast_read>("broadcast_read", {}),
          make_host_kernel<&block_reused_row>("block_reused_row", {}),
          make_host_kernel<&counted_math<8>>("counted_math", {}),
          make_host_kernel<&async_pipeline<3, 8, false>>("async_pipeline3", {}),
          make_host_kernel<&async_pipeline<2, 8, false>>("async_pipeline2", {}),
          make_host_kernel<&async_pipeline<3, 8, true>>("async_pipeline3_half", {}),
          make_host_kernel<&cluster_swap>("cluster_swap", {})};
}

}  // namespace metrale_test
