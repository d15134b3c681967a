// cub_block_sum.cuh: one sum per block with cub::BlockReduce and a warp maximum with
// cub::WarpReduce, typed through <cuda/std/type_traits>: libcu++ and CUB as CUDA 13 ships them
// (include/cccl), compiled by NVRTC as nvcc would.
#pragma once
#include <cub/block/block_reduce.cuh>
#include <cub/warp/warp_reduce.cuh>
#include <cuda/functional>
#include <cuda/std/type_traits>

template <int BLOCK, typename T>
__global__ void cub_block_sum(const T* in, T* sums, T* warp_max) {
  static_assert(cuda::std::is_floating_point_v<T>, "a floating-point sum");
  using BlockReduce = cub::BlockReduce<T, BLOCK>;
  using WarpReduce = cub::WarpReduce<T>;
  __shared__ typename BlockReduce::TempStorage block_storage;
  __shared__ typename WarpReduce::TempStorage warp_storage[BLOCK / 32];
  const T value = in[blockIdx.x * BLOCK + threadIdx.x];
  const T total = BlockReduce(block_storage).Sum(value);
  const T largest = WarpReduce(warp_storage[threadIdx.x / 32]).Reduce(value, ::cuda::maximum<>{});
  if (threadIdx.x == 0) {
    sums[blockIdx.x] = total;
  }
  if (threadIdx.x % 32 == 0) {
    warp_max[(blockIdx.x * BLOCK + threadIdx.x) / 32] = largest;
  }
}
