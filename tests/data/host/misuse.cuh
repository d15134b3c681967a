// Test kernels that misuse barriers and warp collectives: a GPU would hang or compute garbage,
// the host backend must name the kernel, block and thread instead.
#pragma once

namespace metrale_test {

// In block 2, threads from 5 up leave before the barrier the others wait at.
__global__ void exits_before_barrier(int* out) {
  if (blockIdx.x == 2U && threadIdx.x >= 5U) {
    return;
  }
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = 1;
}

// Odd and even threads wait at two different barriers.
__global__ void split_barriers(int* out) {
  if (threadIdx.x % 2U == 1U) {
    __syncthreads();
  } else {
    __syncthreads();
  }
  out[threadIdx.x] = 1;
}

// Lane 3 of every warp leaves; the others shuffle with a full mask.
__global__ void shuffle_names_exited_lane(int* out) {
  if (threadIdx.x % 32U == 3U) {
    return;
  }
  out[threadIdx.x] = __shfl_xor_sync(0xffffffffU, static_cast<int>(threadIdx.x), 1);
}

// Lanes 0..15 shuffle among themselves but read lane 20.
__global__ void shuffle_reads_outside_mask(int* out) {
  if (threadIdx.x >= 16U) {
    return;
  }
  out[threadIdx.x] = __shfl_sync(0x0000ffffU, static_cast<int>(threadIdx.x), 20);
}

// Lane 0 waits at a barrier while its warp shuffles with a full mask.
__global__ void shuffle_against_barrier(int* out) {
  int v = static_cast<int>(threadIdx.x);
  if (threadIdx.x == 0U) {
    __syncthreads();
  } else {
    v = __shfl_down_sync(0xffffffffU, v, 1U);
  }
  out[threadIdx.x] = v;
}

// A shuffle width that is not a power of two.
__global__ void shuffle_bad_width(int* out) {
  out[threadIdx.x] = __shfl_xor_sync(0xffffffffU, static_cast<int>(threadIdx.x), 1, 12);
}

}  // namespace metrale_test

namespace metrale_test {

// Every lane shuffles with a full mask: wrong only in a block whose last warp is partial.
__global__ void full_mask_shuffle(int* out) {
  out[threadIdx.x] = __shfl_xor_sync(0xffffffffU, static_cast<int>(threadIdx.x), 1);
}

}  // namespace metrale_test
