// A kernel that reads one element past its input, run on the host backend. Built only in
// AddressSanitizer builds (tests/cmake/host.cmake), where CTest expects ASan's report: proof that
// the sanitizer sees kernel memory accesses made on fiber stacks.
#include <cstdio>
#include <vector>

#include "host/host_backend.hpp"
#include "metrale/gpu/kernel_launch.hpp"

// clang-format off
#include "metrale/host/cuda_host_prelude.hpp"
// clang-format on

namespace {

__global__ void reads_past_end(const float* in, float* out, unsigned n) {
  __syncthreads();
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = in[i + 1U == n ? n : i + 1U];  // the last thread reads in[n]
}

}  // namespace

int main() {
  metrale::HostBackend gpu;
  gpu.add_kernel(metrale::make_host_kernel<&reads_past_end>("reads_past_end", {}));
  metrale::LoadRequest request;
  request.kernel = "reads_past_end";
  const auto kernel = gpu.load(request);
  const unsigned n = 64;
  const std::vector<float> input(n, 1.5F);
  const metrale::DevicePtr in = gpu.alloc(n * sizeof(float));
  const metrale::DevicePtr out = gpu.alloc(n * sizeof(float));
  gpu.copy_to_device(in, input.data(), n * sizeof(float));
  metrale::KernelLaunch(gpu, kernel).grid({2, 1, 1}).block({32, 1, 1}).arg_ptr(in).arg_ptr(out).arg_u32(n).launch();
  std::puts("no out-of-bounds access was reported");
  return 0;
}
