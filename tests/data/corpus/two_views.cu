// two_views.cu: one block's dynamic shared memory seen through several `extern __shared__`
// declarations, which on a GPU all name the same bytes: a float array at namespace scope, an int
// array in a device function, and a 16-byte-aligned byte array in the kernel viewed as float4.
// Per block of blockDim.x values x (loaded as float4, so 4 * blockDim.x floats per block):
//   sums[b]      the sum of the block's x
//   positives[b] how many of them are > 0
// Layout: [0, 4 * blockDim.x) floats (the float view), then blockDim.x ints (the int view).

extern __shared__ float block_values[];

__device__ int *counts_view(int floats_before) {
  extern __shared__ int words[];
  return words + floats_before;  // floats and ints are both 4 bytes
}

__global__ void two_views(const float4 *x, float *sums, int *positives) {
  extern __shared__ __align__(16) unsigned char storage[];
  float4 *vec = reinterpret_cast<float4 *>(storage);
  unsigned int tid = threadIdx.x;
  float4 v = x[blockIdx.x * blockDim.x + tid];
  vec[tid] = v;  // the same bytes as block_values[4 * tid .. 4 * tid + 3]
  int *counts = counts_view(4 * blockDim.x);
  counts[tid] = (v.x > 0.0f) + (v.y > 0.0f) + (v.z > 0.0f) + (v.w > 0.0f);
  __syncthreads();
  // Sum through the other views: the float array and the ints past it.
  float s = block_values[4 * tid] + block_values[4 * tid + 1] + block_values[4 * tid + 2] + block_values[4 * tid + 3];
  int c = reinterpret_cast<int *>(block_values + 4 * blockDim.x)[tid];
  __syncthreads();
  block_values[tid] = s;
  counts[tid] = c;
  __syncthreads();
  for (unsigned int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (tid < stride) {
      block_values[tid] += block_values[tid + stride];
      counts[tid] += counts[tid + stride];
    }
    __syncthreads();
  }
  if (tid == 0) {
    sums[blockIdx.x] = block_values[0];
    positives[blockIdx.x] = counts[0];
  }
}
