// bitonic_sort.cu: bitonic sorting networks.
//   bitonic_sort_shared  each block sorts its own 2 * blockDim.x keys in shared memory, ascending
//                        (dir = 1) or descending (dir = 0); 2 * blockDim.x a power of two
//   bitonic_sort_step    one compare-exchange step (j, k) over the whole array in global memory;
//                        the host launches it for k = 2, 4, ..., n and j = k / 2, ..., 1 to sort
//                        n keys (a power of two) ascending

__device__ inline void comparator(unsigned int &keyA, unsigned int &keyB, unsigned int dir) {
  if ((keyA > keyB) == dir) {
    unsigned int t = keyA;
    keyA = keyB;
    keyB = t;
  }
}

#define SHARED_SIZE_LIMIT 1024

__global__ void bitonic_sort_shared(unsigned int *d_keys, unsigned int dir) {
  __shared__ unsigned int s_key[SHARED_SIZE_LIMIT];
  const unsigned int arrayLength = 2 * blockDim.x;
  d_keys += blockIdx.x * arrayLength + threadIdx.x;
  s_key[threadIdx.x] = d_keys[0];
  s_key[threadIdx.x + blockDim.x] = d_keys[blockDim.x];
  for (unsigned int size = 2; size < arrayLength; size <<= 1) {
    // Bitonic merge: alternate directions so each pair of sorted halves forms a bitonic sequence.
    unsigned int ddd = dir ^ ((threadIdx.x & (size / 2)) != 0);
    for (unsigned int stride = size / 2; stride > 0; stride >>= 1) {
      __syncthreads();
      unsigned int pos = 2 * threadIdx.x - (threadIdx.x & (stride - 1));
      comparator(s_key[pos], s_key[pos + stride], ddd);
    }
  }
  for (unsigned int stride = arrayLength / 2; stride > 0; stride >>= 1) {
    __syncthreads();
    unsigned int pos = 2 * threadIdx.x - (threadIdx.x & (stride - 1));
    comparator(s_key[pos], s_key[pos + stride], dir);
  }
  __syncthreads();
  d_keys[0] = s_key[threadIdx.x];
  d_keys[blockDim.x] = s_key[threadIdx.x + blockDim.x];
}

__global__ void bitonic_sort_step(unsigned int *dev_values, int j, int k) {
  unsigned int i = threadIdx.x + blockDim.x * blockIdx.x;
  unsigned int ixj = i ^ j;
  if (ixj > i) {
    if ((i & k) == 0) {
      if (dev_values[i] > dev_values[ixj]) {
        unsigned int temp = dev_values[i];
        dev_values[i] = dev_values[ixj];
        dev_values[ixj] = temp;
      }
    } else {
      if (dev_values[i] < dev_values[ixj]) {
        unsigned int temp = dev_values[i];
        dev_values[i] = dev_values[ixj];
        dev_values[ixj] = temp;
      }
    }
  }
}
