// tests/data/corpus/partly_host.cu: one file whose kernels the host backend can build only in
// part, as engines write such files: a helper reading the lane id with inline PTX, a plain (not
// inline) helper over the int8 dot-product intrinsic __dp4a, which the host prelude does not give,
// a function template whose instantiation needs it, and an explicitly instantiated kernel template
// that uses it. A GPU builds and runs every kernel here;
// the host backend must still load and run `affine`, and refuse each of the others naming the
// function it cannot build (issue 38 item 2: a file's kernels load independently).
namespace corpus_partly {

__device__ __forceinline__ unsigned lane_id_ptx() {
  unsigned lane;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
  return lane;
}

// Not inline: the host JIT's object keeps it unless nothing reaches it.
__device__ int dot4_int8(int a, int b) { return __dp4a(a, b, 0); }

template <typename T>
__device__ T dot4_accumulate(T a, T b, T acc) {
  return __dp4a(a, b, acc);
}

// out[i] = the lane of thread i within its warp.
__global__ void lane_ids(unsigned* out) { out[blockIdx.x * blockDim.x + threadIdx.x] = lane_id_ptx(); }

// out[i] = the dot product of the four int8 lanes of a[i] and b[i].
__global__ void dot_rows(const int* a, const int* b, int* out, unsigned n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = dot4_int8(a[i], b[i]);
  }
}

// out[i] = the same dot product plus out[i].
__global__ void dot_accumulate(const int* a, const int* b, int* out, unsigned n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = dot4_accumulate<int>(a[i], b[i], out[i]);
  }
}

// The same dot product as a kernel template, explicitly instantiated (as engines do to keep a
// kernel's instantiations in one file): the instantiation at namespace scope is no function's body,
// so the host stubs the template's.
template <typename T>
__global__ void dot_typed(const T* a, const T* b, T* out, unsigned n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = __dp4a(a[i], b[i], T(0));
  }
}
template __global__ void dot_typed<int>(const int*, const int*, int*, unsigned);

// out[i] = in[i] * k + bias over a ragged tail: nothing here needs what the host lacks.
__global__ void affine(const float* in, float* out, unsigned n, float k, float bias) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = in[i] * k + bias;
  }
}

}  // namespace corpus_partly
