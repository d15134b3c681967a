// Test kernels for the host backend's warp collectives: a full-warp inclusive scan, and
// 16-lane-segment xor sums, broadcasts and down-shifts, plus a ballot.
#pragma once

namespace metrale_test {

// out[i] = in[first of i's warp] + ... + in[i], by the Kogge-Stone scan with __shfl_up_sync.
__global__ void warp_inclusive_scan(const int* __restrict__ in, int* __restrict__ out) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned lane = threadIdx.x % 32U;
  int v = in[i];
  for (unsigned delta = 1; delta < 32U; delta *= 2U) {
    const int up = __shfl_up_sync(0xffffffffU, v, delta);
    if (lane >= delta) {
      v += up;
    }
  }
  out[i] = v;
}

// Per 16-lane segment: sums[i] = segment total (xor butterfly, width 16); firsts[i] = the
// segment's first value (__shfl_sync, width 16); downs[i] = value 3 lanes down within the segment,
// or its own at the segment's end (__shfl_down_sync, width 16); votes[i] = warp ballot of v odd.
__global__ void half_warp_ops(const unsigned* __restrict__ in, unsigned* __restrict__ sums,
                              unsigned* __restrict__ firsts, unsigned* __restrict__ downs,
                              unsigned* __restrict__ votes) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned v = in[i];
  unsigned s = v;
  for (int offset = 8; offset > 0; offset /= 2) {
    s += __shfl_xor_sync(0xffffffffU, s, offset, 16);
  }
  sums[i] = s;
  firsts[i] = __shfl_sync(0xffffffffU, v, 0, 16);
  downs[i] = __shfl_down_sync(0xffffffffU, v, 3U, 16);
  votes[i] = __ballot_sync(0xffffffffU, static_cast<int>(v & 1U));
}

// Each half-warp shuffles only among itself (mask = its own 16 lanes), at different sites.
__global__ void split_half_warps(const int* __restrict__ in, int* __restrict__ out) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned lane = threadIdx.x % 32U;
  int v = in[i];
  if (lane < 16U) {
    v = __shfl_sync(0x0000ffffU, v, static_cast<int>(15U - lane));
  } else {
    v = __shfl_xor_sync(0xffff0000U, v, 1);
  }
  out[i] = v;
}

}  // namespace metrale_test
