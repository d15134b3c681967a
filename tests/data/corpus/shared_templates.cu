// tests/data/corpus/shared_templates.cu: dynamic shared memory reached from function templates,
// the forms CUDA's samples use: a namespace-scope `extern __shared__` array a template writes, an
// aligned `extern __shared__ __align__(16)` byte array inside a function template (and one with
// the alignment before __shared__), and the samples' SharedMemory<T> struct (an `extern
// __shared__` array in a member of a class template), instantiated explicitly as .cu files do
// (`template __global__ void reverse_struct<float>(...);`, which nvcc and NVRTC accept). Each
// kernel reverses its block's values through the buffer.
namespace corpus_smem {

extern __shared__ float smem[];

template <int Scale>
__device__ void stage(const float* in, unsigned i) {
  smem[threadIdx.x] = in[i] * Scale;
}

template <int Scale>
__global__ void reverse_scaled(const float* in, float* out) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  stage<Scale>(in, i);
  __syncthreads();
  out[i] = smem[blockDim.x - 1 - threadIdx.x];
}

template <typename T>
__device__ T* shared_as() {
  extern __shared__ __align__(16) unsigned char raw_smem[];
  return reinterpret_cast<T*>(raw_smem);
}

__global__ void reverse_typed(const int* in, int* out) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  int* s = shared_as<int>();
  s[threadIdx.x] = in[i];
  __syncthreads();
  out[i] = s[blockDim.x - 1 - threadIdx.x];
}

// The alignment before __shared__, as some samples spell it.
template <typename T>
__device__ T* aligned_shared() {
  extern __align__(16) __shared__ unsigned char aligned_smem[];
  return reinterpret_cast<T*>(aligned_smem);
}

__global__ void reverse_aligned(const float* in, float* out) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  float* s = aligned_shared<float>();
  s[threadIdx.x] = in[i];
  __syncthreads();
  out[i] = s[blockDim.x - 1 - threadIdx.x];
}

template <class T>
struct SharedMemory {
  __device__ inline operator T*() {
    extern __shared__ int __smem[];
    return (T*)__smem;
  }
};

template <typename T>
__global__ void reverse_struct(const T* in, T* out) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  T* s = SharedMemory<T>();
  s[threadIdx.x] = in[i];
  __syncthreads();
  out[i] = s[blockDim.x - 1 - threadIdx.x];
}

template __global__ void reverse_struct<float>(const float* in, float* out);
extern template __global__ void reverse_struct<int>(const int* in, int* out);
template __global__ void reverse_struct<int>(const int* in, int* out);

}  // namespace corpus_smem
