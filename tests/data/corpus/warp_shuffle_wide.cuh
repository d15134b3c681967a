// tests/data/corpus/warp_shuffle_wide.cuh: warp shuffles of the types NVRTC takes beyond 32 bits
// and below: double, __half2 and __nv_bfloat162 through __shfl_xor_sync, and 16- and 24-byte
// values (uint4, a struct) through a tile's shfl_xor and shfl_down (cooperative groups move any
// trivially copyable type).
#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace cg = cooperative_groups;

namespace corpus_shfl {

struct Triple {
  double a;
  float b;
  int c;
  long long d;
};

// out[i] = in[i ^ lane_mask] for each type; triples[i] = the 16-lane tile's shfl_down by 3.
__global__ void wide_shuffles(const uint4* in4, uint4* out4, const double* ind, double* outd, const __half2* inh,
                              __half2* outh, const __nv_bfloat162* inb, __nv_bfloat162* outb, const Triple* int3s,
                              Triple* outt, int lane_mask) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(cg::this_thread_block());
  out4[i] = warp.shfl_xor(in4[i], lane_mask);
  outd[i] = __shfl_xor_sync(0xffffffffu, ind[i], lane_mask);
  outh[i] = __shfl_xor_sync(0xffffffffu, inh[i], lane_mask);
  outb[i] = __shfl_xor_sync(0xffffffffu, inb[i], lane_mask);
  cg::thread_block_tile<16> tile = cg::tiled_partition<16>(cg::this_thread_block());
  outt[i] = tile.shfl_down(int3s[i], 3);
}

}  // namespace corpus_shfl
