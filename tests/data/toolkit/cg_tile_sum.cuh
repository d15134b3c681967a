// cg_tile_sum.cuh: a block sum written with cooperative groups as nvcc users write it (warp tiles
// reduced with cg::reduce, one atomicAdd per tile); compiled by NVRTC against the toolkit's
// <cooperative_groups.h>, which needs CUDA 13's include/cccl (cuda/std/type_traits).
#pragma once
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

namespace cg = cooperative_groups;

template <int BLOCK>
__global__ void cg_tile_sum(const float* in, float* out, int n) {
  const cg::thread_block block = cg::this_thread_block();
  const cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);
  const int i = static_cast<int>(block.group_index().x) * BLOCK + static_cast<int>(block.thread_rank());
  const float value = i < n ? in[i] : 0.0f;
  const float sum = cg::reduce(tile, value, cg::plus<float>());
  if (tile.thread_rank() == 0) {
    atomicAdd(out, sum);
  }
}
