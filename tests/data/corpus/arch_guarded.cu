// tests/data/corpus/arch_guarded.cu: kernels as engines guard code for a minimum architecture
// (the device pass of nvcc, and NVRTC, define __CUDA_ARCH__; the host pass does not), and the
// compiler macros a kernel sees, reported as numbers. The bodies under `#if __CUDA_ARCH__` must
// run on every path that compiles the kernel for a device, the host backend's included.
namespace corpus_arch {

// out[i] = in[i] * k + 1, only where the architecture has independent thread scheduling.
__global__ void guarded_scale(const float* in, float* out, unsigned n, float k) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = in[i] * k + 1.0f;
  }
#endif
}

// What the compiler said: out[0] = __CUDA_ARCH__ (-1 when undefined), out[1] = __CUDACC__
// defined, out[2] = __CUDACC_RTC__ defined, out[3] = __NVCC__ defined (nvcc only, never NVRTC).
__global__ void compiler_macros(int* out) {
  int arch = -1;
#if defined(__CUDA_ARCH__)
  arch = __CUDA_ARCH__;
#endif
  int cudacc = 0;
#if defined(__CUDACC__)
  cudacc = 1;
#endif
  int rtc = 0;
#if defined(__CUDACC_RTC__)
  rtc = 1;
#endif
  int nvcc = 0;
#if defined(__NVCC__)
  nvcc = 1;
#endif
  if (threadIdx.x == 0) {
    out[0] = arch;
    out[1] = cudacc;
    out[2] = rtc;
    out[3] = nvcc;
  }
}

}  // namespace corpus_arch
