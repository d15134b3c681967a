// host_prelude_test.cpp: the host prelude's CUDA intrinsics against CUDA's definitions: the
// integer and float intrinsics (pure, called directly), the atomic family's overloads and wrap
// rules, and the collectives with partial masks, widths and divergence (kernels on fibers):
// __activemask, __match_any/all_sync, __reduce_*_sync, __syncthreads_count/_and/_or.
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "data/host/host_test_support.hpp"
#include "host/host_backend.hpp"
#include "metrale/gpu/kernel_launch.hpp"
#include "metrale/host/host_kernel.hpp"

// clang-format off
#include "metrale/host/cuda_host_prelude.hpp"
// clang-format on

namespace prelude_test {

// out[t] = the lanes that reached __activemask() together: odd lanes in one branch, lanes
// divisible by 4 in another, the rest at a third call after the branches.
__global__ void divergent_active_masks(unsigned* out) {
  const unsigned lane = threadIdx.x % 32U;
  if (lane % 2U == 1U) {
    out[threadIdx.x] = __activemask();
  } else if (lane % 4U == 0U) {
    out[threadIdx.x] = __activemask();
  } else {
    out[threadIdx.x] = __activemask();
  }
}

// Lanes 0..15 only: match and reduce with a half-warp mask; keys repeat every 4 lanes.
__global__ void half_warp_match_reduce(unsigned* peers, int* all_same, int* sums, unsigned* ors, int* mins) {
  const unsigned t = threadIdx.x;
  if (t >= 16U) {
    return;
  }
  const unsigned long long key = t % 4U;
  peers[t] = __match_any_sync(0x0000ffffU, key);
  int pred = -1;
  __match_all_sync(0x0000ffffU, 7.5F, &pred);
  all_same[t] = pred;
  sums[t] = __reduce_add_sync(0x0000ffffU, static_cast<int>(t) - 8);
  ors[t] = __reduce_or_sync(0x0000ffffU, 1U << t);
  mins[t] = __reduce_min_sync(0x0000ffffU, static_cast<int>(t) - 8);
}

// A block of 100: the count, and, or of t < limit over the whole block, twice at one site.
__global__ void block_votes(int limit, int* out) {
  for (int round = 0; round < 2; ++round) {
    const int pred = static_cast<int>(threadIdx.x) < limit + round;
    const int count = __syncthreads_count(pred);
    const int all = __syncthreads_and(pred);
    const int any = __syncthreads_or(pred);
    if (threadIdx.x == 0) {
      out[3 * round] = count;
      out[3 * round + 1] = all;
      out[3 * round + 2] = any;
    }
  }
}

// A shuffle of width 8 under a mask of lanes 8..15 only.
__global__ void partial_width_shuffle(int* out) {
  const unsigned lane = threadIdx.x % 32U;
  if (lane >= 8U && lane < 16U) {
    out[threadIdx.x] = __shfl_down_sync(0x0000ff00U, static_cast<int>(lane), 2U, 8);
  }
}

}  // namespace prelude_test

TEST_CASE("integer intrinsics follow CUDA's definitions", "[host][prelude]") {
  CHECK(__popc(0xf0f0f0f0U) == 16);
  CHECK(__popcll(0xffffffffffffffffULL) == 64);
  CHECK(__clz(0) == 32);
  CHECK(__clz(1) == 31);
  CHECK(__clz(-1) == 0);
  CHECK(__clzll(1LL) == 63);
  CHECK(__ffs(0) == 0);
  CHECK(__ffs(0x10) == 5);
  CHECK(__ffs(static_cast<int>(0x80000000U)) == 32);
  CHECK(__ffsll(1LL << 40) == 41);
  CHECK(__brev(1U) == 0x80000000U);
  CHECK(__brev(0x12345678U) == 0x1e6a2c48U);
  CHECK(__brevll(1ULL) == 0x8000000000000000ULL);
  // Selector nibbles pick bytes of y:x (x = bytes 0..3).
  CHECK(__byte_perm(0x33221100U, 0x77665544U, 0x3210U) == 0x33221100U);
  CHECK(__byte_perm(0x33221100U, 0x77665544U, 0x7654U) == 0x77665544U);
  CHECK(__byte_perm(0x33221100U, 0x77665544U, 0x0123U) == 0x00112233U);
  CHECK(__byte_perm(0x33221100U, 0x77665544U, 0x5140U) == 0x55114400U);
  CHECK(__funnelshift_l(0x80000000U, 0x1U, 1U) == 0x3U);
  CHECK(__funnelshift_l(0x0U, 0x1U, 33U) == 0x2U);                 // shift mod 32
  CHECK(__funnelshift_lc(0x12345678U, 0x1U, 40U) == 0x12345678U);  // clamped to 32
  CHECK(__funnelshift_r(0x1U, 0x3U, 1U) == 0x80000000U);
  CHECK(__funnelshift_rc(0x1U, 0x3U, 40U) == 0x3U);
  CHECK(__mul24(-3, 5) == -15);
  CHECK(__mul24(0x01000003, 2) == 6);  // only the low 24 bits take part
  CHECK(__umul24(0xff000004U, 0x01000005U) == 20U);
  CHECK(__mulhi(-2, 0x40000000) == -1);
  CHECK(__umulhi(0x80000000U, 4U) == 2U);
  CHECK(__umul64hi(0xffffffffffffffffULL, 0xffffffffffffffffULL) == 0xfffffffffffffffeULL);
  CHECK(__mul64hi(-1LL, -1LL) == 0);
  CHECK(__mul64hi(-2LL, 0x4000000000000000LL) == -1);
  CHECK(__hadd(-3, 0) == -2);
  CHECK(__rhadd(1, 2) == 2);
  CHECK(__uhadd(0xffffffffU, 0xffffffffU) == 0xffffffffU);
  CHECK(__urhadd(0xffffffffU, 0U) == 0x80000000U);
  CHECK(__sad(-4, 6, 1U) == 11U);
  CHECK(__usad(3U, 10U, 2U) == 9U);
  CHECK(umin(3U, 4U) == 3U);
  CHECK(llmax(-5LL, 2LL) == 2LL);
  // CUDA's min/max mix integer types by the usual conversions, floats like fminf/fmaxf.
  CHECK(max(3, 4.5F) == 4.5F);
  CHECK(min(-1, 2U) == 2U);  // -1 converts to UINT_MAX, as in CUDA
  CHECK(max(std::nanf(""), 1.0F) == 1.0F);
}

TEST_CASE("float intrinsics and conversions follow CUDA's definitions", "[host][prelude]") {
  CHECK(__fdividef(1.0F, 4.0F) == 0.25F);
  CHECK(__saturatef(-0.5F) == 0.0F);
  CHECK(__saturatef(1.5F) == 1.0F);
  CHECK(__saturatef(0.25F) == 0.25F);
  CHECK(rsqrtf(4.0F) == 0.5F);
  CHECK(fmaf(2.0F, 3.0F, 1.0F) == 7.0F);
  CHECK(__fmaf_rn(2.0F, 3.0F, 1.0F) == 7.0F);
  CHECK(__expf(0.0F) == 1.0F);
  CHECK(__logf(1.0F) == 0.0F);
  CHECK(__powf(2.0F, 10.0F) == 1024.0F);
  CHECK(__sinf(0.0F) == 0.0F);
  CHECK(__cosf(0.0F) == 1.0F);
  float s = 0.0F;
  float c = 0.0F;
  __sincosf(0.0F, &s, &c);
  CHECK((s == 0.0F && c == 1.0F));
  CHECK(__exp10f(2.0F) == Approx(100.0F));
  CHECK(__log2f(8.0F) == 3.0F);
  CHECK(__int_as_float(0x3f800000) == 1.0F);
  CHECK(__float_as_int(-2.0F) == static_cast<int>(0xc0000000U));
  CHECK(__float_as_uint(1.0F) == 0x3f800000U);
  CHECK(__double_as_longlong(1.0) == 0x3ff0000000000000LL);
  CHECK(__hiloint2double(__double2hiint(2.5), __double2loint(2.5)) == 2.5);
  CHECK(__float2int_rn(2.5F) == 2);
  CHECK(__float2int_rn(3.5F) == 4);
  CHECK(__float2int_rz(-2.7F) == -2);
  CHECK(__float2int_rd(-2.2F) == -3);
  CHECK(__float2int_ru(2.2F) == 3);
  CHECK(__float2ll_rn(1e12F) == 999999995904LL);
  CHECK(__int2float_rn(16777217) == 16777216.0F);
  CHECK(sinpif(0.5F) == 1.0F);
  CHECK(cospif(0.0F) == 1.0F);
  CHECK(rsqrt(16.0) == 0.25);
}

TEST_CASE("the atomic family has CUDA's overloads and wraps as CUDA defines", "[host][prelude][concurrency]") {
  int i = 5;
  CHECK(atomicExch(&i, 7U) == 5);  // (int*, unsigned): the int form
  CHECK(atomicMax(&i, 9U) == 7);
  CHECK(atomicMin(&i, 2U) == 9);
  CHECK(atomicCAS(&i, 2U, 3U) == 2);
  CHECK(i == 3);
  CHECK(atomicCAS(&i, 2, 4) == 3);  // no swap
  CHECK(i == 3);
  CHECK(atomicSub(&i, 1) == 3);
  CHECK(atomicAnd(&i, 6) == 2);
  CHECK(atomicOr(&i, 5) == 2);
  CHECK(atomicXor(&i, 1) == 7);
  CHECK(i == 6);
  unsigned u = 0;
  // atomicInc: ((old >= limit) ? 0 : old + 1); atomicDec: ((old == 0 || old > limit) ? limit : old - 1).
  std::vector<unsigned> incs;
  for (int k = 0; k < 5; ++k) {
    incs.push_back(atomicInc(&u, 2U));
  }
  CHECK(incs == std::vector<unsigned>{0, 1, 2, 0, 1});
  u = 9;
  CHECK(atomicInc(&u, 3U) == 9);
  CHECK(u == 0);
  std::vector<unsigned> decs;
  u = 1;
  for (int k = 0; k < 4; ++k) {
    decs.push_back(atomicDec(&u, 2U));
  }
  CHECK(decs == std::vector<unsigned>{1, 0, 2, 1});
  u = 7;
  CHECK(atomicDec(&u, 3U) == 7);
  CHECK(u == 3);
  unsigned long long ull = 1;
  CHECK(atomicAdd(&ull, 2ULL) == 1);
  CHECK(atomicMax(&ull, 10ULL) == 3);
  CHECK(atomicCAS(&ull, 10ULL, 11ULL) == 10);
  CHECK(atomicAnd(&ull, 0xfULL) == 11);
  CHECK(atomicOr_block(&ull, 0x10ULL) == 11);
  CHECK(atomicXor_system(&ull, 1ULL) == 27);
  long long ll = -5;
  CHECK(atomicMin(&ll, -7LL) == -5);
  CHECK(atomicMax(&ll, 3LL) == -7);
  float f = 1.0F;
  CHECK(atomicAdd(&f, 0.5F) == 1.0F);
  CHECK(atomicExch(&f, 4.0F) == 1.5F);
  CHECK(atomicAdd_block(&f, 1.0F) == 4.0F);
  double d = 0.25;
  CHECK(atomicAdd_system(&d, 0.25) == 0.25);
  CHECK(d == 0.5);
  unsigned short h = 3;
  CHECK(atomicCAS(&h, static_cast<unsigned short>(3), static_cast<unsigned short>(8)) == 3);
  CHECK(h == 8);
}

TEST_CASE("__activemask names the lanes that reached it together, also in divergent branches", "[host][prelude]") {
  metrale::HostBackend gpu;
  gpu.add_kernel(metrale::make_host_kernel<&prelude_test::divergent_active_masks>("masks", {}));
  const metrale::DevicePtr out = metrale_test::upload(gpu, std::vector<unsigned>(48, 0));
  // A warp and a half: the second warp has lanes 0..15 only.
  metrale::KernelLaunch(gpu, metrale_test::load_kernel(gpu, "masks"))
      .grid({1, 1, 1})
      .block({48, 1, 1})
      .arg_ptr(out)
      .launch();
  const std::vector<unsigned> got = metrale_test::download<unsigned>(gpu, out, 48);
  for (unsigned t = 0; t < 48; ++t) {
    INFO("thread " << t);
    const unsigned lane = t % 32U;
    const unsigned present = t < 32 ? 0xffffffffU : 0x0000ffffU;
    const unsigned odd = 0xaaaaaaaaU & present;
    const unsigned fours = 0x11111111U & present;
    const unsigned rest = present & ~odd & ~fours;
    CHECK(got[t] == (lane % 2U == 1U ? odd : lane % 4U == 0U ? fours : rest));
  }
}

TEST_CASE("match and reduce collectives honour a partial mask", "[host][prelude]") {
  metrale::HostBackend gpu;
  gpu.add_kernel(metrale::make_host_kernel<&prelude_test::half_warp_match_reduce>("match", {}));
  const metrale::DevicePtr peers = metrale_test::upload(gpu, std::vector<unsigned>(16, 0));
  const metrale::DevicePtr all_same = metrale_test::upload(gpu, std::vector<int>(16, -1));
  const metrale::DevicePtr sums = metrale_test::upload(gpu, std::vector<int>(16, 0));
  const metrale::DevicePtr ors = metrale_test::upload(gpu, std::vector<unsigned>(16, 0));
  const metrale::DevicePtr mins = metrale_test::upload(gpu, std::vector<int>(16, 0));
  metrale::KernelLaunch(gpu, metrale_test::load_kernel(gpu, "match"))
      .grid({1, 1, 1})
      .block({32, 1, 1})
      .arg_ptr(peers)
      .arg_ptr(all_same)
      .arg_ptr(sums)
      .arg_ptr(ors)
      .arg_ptr(mins)
      .launch();
  const std::vector<unsigned> got_peers = metrale_test::download<unsigned>(gpu, peers, 16);
  for (unsigned t = 0; t < 16; ++t) {
    INFO("lane " << t);
    CHECK(got_peers[t] == (0x1111U << (t % 4U)));
  }
  CHECK(metrale_test::download<int>(gpu, all_same, 16) == std::vector<int>(16, 1));
  CHECK(metrale_test::download<int>(gpu, sums, 16) == std::vector<int>(16, 120 - 128));
  CHECK(metrale_test::download<unsigned>(gpu, ors, 16) == std::vector<unsigned>(16, 0xffffU));
  CHECK(metrale_test::download<int>(gpu, mins, 16) == std::vector<int>(16, -8));
}

TEST_CASE("__syncthreads_count, _and and _or vote over the whole block", "[host][prelude]") {
  metrale::HostBackend gpu;
  gpu.add_kernel(metrale::make_host_kernel<&prelude_test::block_votes>("votes", {}));
  const metrale::DevicePtr out = metrale_test::upload(gpu, std::vector<int>(6, -1));
  const auto kernel = metrale_test::load_kernel(gpu, "votes");
  metrale::KernelLaunch(gpu, kernel).grid({1, 1, 1}).block({100, 1, 1}).arg_i32(37).arg_ptr(out).launch();
  CHECK(metrale_test::download<int>(gpu, out, 6) == std::vector<int>{37, 0, 1, 38, 0, 1});
  metrale::KernelLaunch(gpu, kernel).grid({1, 1, 1}).block({100, 1, 1}).arg_i32(99).arg_ptr(out).launch();
  CHECK(metrale_test::download<int>(gpu, out, 6) == std::vector<int>{99, 0, 1, 100, 1, 1});
  metrale::KernelLaunch(gpu, kernel).grid({1, 1, 1}).block({100, 1, 1}).arg_i32(0).arg_ptr(out).launch();
  CHECK(metrale_test::download<int>(gpu, out, 6) == std::vector<int>{0, 0, 0, 1, 0, 1});
}

TEST_CASE("a shuffle of width 8 under a mask of one 8-lane segment stays in the segment", "[host][prelude]") {
  metrale::HostBackend gpu;
  gpu.add_kernel(metrale::make_host_kernel<&prelude_test::partial_width_shuffle>("shfl8", {}));
  const metrale::DevicePtr out = metrale_test::upload(gpu, std::vector<int>(32, -1));
  metrale::KernelLaunch(gpu, metrale_test::load_kernel(gpu, "shfl8"))
      .grid({1, 1, 1})
      .block({32, 1, 1})
      .arg_ptr(out)
      .launch();
  const std::vector<int> got = metrale_test::download<int>(gpu, out, 32);
  for (int lane = 8; lane < 16; ++lane) {
    INFO("lane " << lane);
    CHECK(got[static_cast<std::size_t>(lane)] == (lane + 2 < 16 ? lane + 2 : lane));
  }
  CHECK(got[0] == -1);
  CHECK(got[16] == -1);
}
