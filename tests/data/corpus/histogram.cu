// histogram.cu: 256-bin histograms of bytes with atomics.
//   histogram_global   every thread adds straight into the global bins (grid-stride loop)
//   histogram_shared   each block counts into its own shared-memory bins, then adds them to the
//                      global bins once: far fewer global atomics

#define NUM_BINS 256

__global__ void histogram_global(const unsigned char *data, unsigned int n, unsigned int *bins) {
  for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    atomicAdd(&bins[data[i]], 1);
  }
}

__global__ void histogram_shared(const unsigned char *data, unsigned int n, unsigned int *bins) {
  __shared__ unsigned int s_bins[NUM_BINS];
  for (int b = threadIdx.x; b < NUM_BINS; b += blockDim.x) s_bins[b] = 0;
  __syncthreads();
  for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    atomicAdd(&s_bins[data[i]], 1u);
  }
  __syncthreads();
  for (int b = threadIdx.x; b < NUM_BINS; b += blockDim.x) {
    if (s_bins[b] != 0) atomicAdd(&bins[b], s_bins[b]);
  }
}
