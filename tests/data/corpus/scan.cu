// scan.cu: prefix sums, block by block, three ways.
//   scan_naive       Hillis-Steele exclusive scan of one block's blockDim.x elements, double
//                    buffered in `extern __shared__ int temp[]` (2 * blockDim.x ints)
//   scan_blelloch    the work-efficient up-sweep/down-sweep exclusive scan of 2 * blockDim.x
//                    elements per block, padded against bank conflicts
//   warp_scan        an inclusive scan inside each `width`-lane segment of a warp, by shuffles
//   shfl_scan        a block-wide inclusive scan: warps scan by shuffles, their totals go through
//                    `extern __shared__ int sums[]`, the first warp scans those; the block's total
//                    goes to block_sums[blockIdx.x]

__global__ void scan_naive(int *g_odata, const int *g_idata) {
  extern __shared__ int temp[];
  int n = blockDim.x;
  int thid = threadIdx.x;
  const int *in = g_idata + blockIdx.x * n;
  int pout = 0, pin = 1;
  temp[pout * n + thid] = (thid > 0) ? in[thid - 1] : 0;
  __syncthreads();
  for (int offset = 1; offset < n; offset *= 2) {
    pout = 1 - pout;
    pin = 1 - pout;
    if (thid >= offset)
      temp[pout * n + thid] = temp[pin * n + thid] + temp[pin * n + thid - offset];
    else
      temp[pout * n + thid] = temp[pin * n + thid];
    __syncthreads();
  }
  g_odata[blockIdx.x * n + thid] = temp[pout * n + thid];
}

#define NUM_BANKS 32
#define LOG_NUM_BANKS 5
#define CONFLICT_FREE_OFFSET(n) ((n) >> LOG_NUM_BANKS)

__global__ void scan_blelloch(int *g_odata, const int *g_idata) {
  extern __shared__ int temp[];
  int n = 2 * blockDim.x;
  int thid = threadIdx.x;
  const int *in = g_idata + blockIdx.x * n;
  int *out = g_odata + blockIdx.x * n;
  int ai = thid;
  int bi = thid + n / 2;
  int bankOffsetA = CONFLICT_FREE_OFFSET(ai);
  int bankOffsetB = CONFLICT_FREE_OFFSET(bi);
  temp[ai + bankOffsetA] = in[ai];
  temp[bi + bankOffsetB] = in[bi];
  int offset = 1;
  for (int d = n >> 1; d > 0; d >>= 1) {
    __syncthreads();
    if (thid < d) {
      int a = offset * (2 * thid + 1) - 1;
      int b = offset * (2 * thid + 2) - 1;
      a += CONFLICT_FREE_OFFSET(a);
      b += CONFLICT_FREE_OFFSET(b);
      temp[b] += temp[a];
    }
    offset *= 2;
  }
  if (thid == 0) temp[n - 1 + CONFLICT_FREE_OFFSET(n - 1)] = 0;
  for (int d = 1; d < n; d *= 2) {
    offset >>= 1;
    __syncthreads();
    if (thid < d) {
      int a = offset * (2 * thid + 1) - 1;
      int b = offset * (2 * thid + 2) - 1;
      a += CONFLICT_FREE_OFFSET(a);
      b += CONFLICT_FREE_OFFSET(b);
      int t = temp[a];
      temp[a] = temp[b];
      temp[b] += t;
    }
  }
  __syncthreads();
  out[ai] = temp[ai + bankOffsetA];
  out[bi] = temp[bi + bankOffsetB];
}

__global__ void warp_scan(const int *in, int *out, int width) {
  int id = blockIdx.x * blockDim.x + threadIdx.x;
  int lane = threadIdx.x % width;
  int value = in[id];
  for (int i = 1; i < width; i *= 2) {
    int n = __shfl_up_sync(0xffffffff, value, i, width);
    if (lane >= i) value += n;
  }
  out[id] = value;
}

__global__ void shfl_scan(const int *in, int *out, int *block_sums) {
  extern __shared__ int sums[];
  int id = blockIdx.x * blockDim.x + threadIdx.x;
  int lane_id = threadIdx.x % warpSize;
  int warp_id = threadIdx.x / warpSize;
  int value = in[id];
  for (int i = 1; i <= warpSize; i *= 2) {
    int n = __shfl_up_sync(0xffffffff, value, i, warpSize);
    if (lane_id >= i) value += n;
  }
  if (threadIdx.x % warpSize == warpSize - 1) sums[warp_id] = value;
  __syncthreads();
  if (warp_id == 0 && lane_id < (blockDim.x / warpSize)) {
    int warp_sum = sums[lane_id];
    unsigned int warps = blockDim.x / warpSize;  // a power of two
    unsigned int mask = warps >= 32 ? 0xffffffffu : (1u << warps) - 1;
    for (int i = 1; i <= (int)warps; i *= 2) {
      int n = __shfl_up_sync(mask, warp_sum, i, warps);
      if (lane_id >= i) warp_sum += n;
    }
    sums[lane_id] = warp_sum;
  }
  __syncthreads();
  int block_sum = 0;
  if (warp_id > 0) block_sum = sums[warp_id - 1];
  value += block_sum;
  out[id] = value;
  if (threadIdx.x == blockDim.x - 1) block_sums[blockIdx.x] = value;
}
