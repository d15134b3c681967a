// traffic_kernels.cuh: small kernels whose memory traffic is known by hand, for the profile
// tests (tests/unit/profile_traffic_test.cpp). Plain CUDA C++, as the library's templates.
#pragma once

namespace metrale_test_kernels {

// out[i] = in[i]: each warp reads and writes 32 consecutive floats (128 bytes, 4 sectors).
__global__ void coalesced_copy(const float* __restrict__ in, float* __restrict__ out) {
  const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = in[i];
}

// Each lane reads a 16-byte vector: a warp reads 512 bytes (16 sectors) in one request.
__global__ void vector_copy(const uint4* __restrict__ in, uint4* __restrict__ out) {
  const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = __ldg(in + i);
}

// Lane i reads in[32 i]: 128 bytes apart, so each of a warp's 32 lanes needs its own sector.
__global__ void strided_read(const float* __restrict__ in, float* __restrict__ out) {
  const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = in[32u * i];
}

// Every thread reads in[0]: one sector per request, one sector of DRAM for the whole grid.
__global__ void broadcast_read(const float* __restrict__ in, float* __restrict__ out) {
  const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = __ldg(in);
}

// Every warp of a block reads the same 32-float row (row blockIdx.x % 2 of `rows`): the block
// moves the row from L2 once, the grid reads two rows from DRAM.
__global__ void block_reused_row(const float* __restrict__ rows, float* __restrict__ out) {
  const unsigned int lane = threadIdx.x % 32u;
  const float v = rows[(blockIdx.x % 2u) * 32u + lane];
  out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}

// FMAS fused multiply-adds, one expf and one warp sum per thread.
template <unsigned int FMAS>
__global__ void counted_math(const float* __restrict__ in, float* __restrict__ out) {
  const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  float acc = in[i];
  for (unsigned int j = 0; j < FMAS; ++j) {
    acc = __fmaf_rn(acc, 0.5f, 1.0f);
  }
  acc = expf(acc * 1e-3f);
  acc += __shfl_xor_sync(0xffffffffu, acc, 1);
  out[i] = acc;
}

}  // namespace metrale_test_kernels
