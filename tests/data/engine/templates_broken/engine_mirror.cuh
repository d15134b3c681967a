// engine_mirror.cuh, broken on purpose (tests/unit/engine_kernels_test.cpp): line 6 names a
// variable that does not exist, so the host compiler's log must quote this file and line.
namespace engine {
template <int BLOCK>
__global__ void mirror_scale(const float* x, float* y, float s, int chunks) {
  y[threadIdx.x] = s * x[threadIdx.x] + not_declared_anywhere;
}
template <int BLOCK, int GROUPS>
__global__ void mirror_scale_twin(const float* x, float* y, float s, int chunks) {
  y[threadIdx.x] = s * x[threadIdx.x] + not_declared_anywhere;
}
}  // namespace engine
