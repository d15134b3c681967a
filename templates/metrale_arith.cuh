// metrale_arith.cuh: everything that fixes the kernels' arithmetic order, in one place, so a
// parent kernel and its twin cannot drift apart. Owned by the kernels area.
// Invariants:
// - bf16 -> float is exact (bit shift), every product-accumulate is an explicit __fmaf_rn in
//   element order, so the result does not depend on the compiler's contraction choices;
// - the warp sum is the xor butterfly 16, 8, 4, 2, 1 and an output is warp_even + warp_odd;
// - the fp8 scale and e4m3 conversion (metrale_types.cuh) are the only definitions the fp8
//   kernels use; no toolkit header is included, so NVRTC needs no -I for these kernels;
// - tensor-core tiles are touched only through the mma_* functions (PTX wmma m16n16k16, bf16
//   in, fp32 accumulate): a fragment's per-lane contents are opaque, on the GPU by the PTX ISA
//   and on the host by the emulation, so no kernel can depend on a lane layout.
// Plain CUDA C++ only: compiled by NVRTC and, after the host prelude, by the host compiler. The
// MMA, async-copy and cluster wrappers are the only functions with a device and a host body:
// inline PTX on the device (sm_80 and newer, the cluster PTX sm_90 and newer; nothing here is
// emitted for a kernel that does not call them), and on the host warp collectives over whole
// tiles, plain copies and the cluster calls of metrale/host/thread_context.hpp.
#pragma once

#include "metrale_types.cuh"

namespace metrale {
namespace kernels {

// Every lane of a warp: the shuffles below name the whole warp.
constexpr unsigned int kFullWarpMask = 0xffffffffu;

// bf16 is the top half of a float, so both conversions below are exact.
__device__ inline float bf16_low_to_float(unsigned int packed) { return __uint_as_float(packed << 16); }
__device__ inline float bf16_high_to_float(unsigned int packed) { return __uint_as_float(packed & 0xffff0000u); }

// One 16-byte step of a bf16 dot product: 8 (x, w) pairs, accumulated in element order.
__device__ inline float bf16x8_dot_step(float acc, uint4 x, uint4 w) {
  acc = __fmaf_rn(bf16_low_to_float(x.x), bf16_low_to_float(w.x), acc);
  acc = __fmaf_rn(bf16_high_to_float(x.x), bf16_high_to_float(w.x), acc);
  acc = __fmaf_rn(bf16_low_to_float(x.y), bf16_low_to_float(w.y), acc);
  acc = __fmaf_rn(bf16_high_to_float(x.y), bf16_high_to_float(w.y), acc);
  acc = __fmaf_rn(bf16_low_to_float(x.z), bf16_low_to_float(w.z), acc);
  acc = __fmaf_rn(bf16_high_to_float(x.z), bf16_high_to_float(w.z), acc);
  acc = __fmaf_rn(bf16_low_to_float(x.w), bf16_low_to_float(w.w), acc);
  acc = __fmaf_rn(bf16_high_to_float(x.w), bf16_high_to_float(w.w), acc);
  return acc;
}

// Sum over the 32 lanes of a warp, the xor butterfly 16, 8, 4, 2, 1; every lane gets the sum.
// Every lane of the warp must call it.
__device__ inline float warp_xor_sum(float value) {
  value += __shfl_xor_sync(kFullWarpMask, value, 16);
  value += __shfl_xor_sync(kFullWarpMask, value, 8);
  value += __shfl_xor_sync(kFullWarpMask, value, 4);
  value += __shfl_xor_sync(kFullWarpMask, value, 2);
  value += __shfl_xor_sync(kFullWarpMask, value, 1);
  return value;
}

// Max over the LANES lanes of one team (LANES a power of two <= 32, teams aligned within the
// warp; width-LANES xor shuffles); `team_mask` names exactly the calling team, so the other
// teams of the warp may be idle. Exact in any order.
template <unsigned int LANES>
__device__ inline float team_max(float value, unsigned int team_mask) {
  for (unsigned int offset = LANES / 2u; offset > 0u; offset /= 2u) {
    value = fmaxf(value, __shfl_xor_sync(team_mask, value, static_cast<int>(offset), static_cast<int>(LANES)));
  }
  return value;
}

// The shuffle mask of the LANES-lane team that holds thread `thread_in_block`.
template <unsigned int LANES>
__device__ inline unsigned int team_mask(unsigned int thread_in_block) {
  static_assert(LANES >= 1u && LANES <= 32u && (LANES & (LANES - 1u)) == 0u, "LANES must be a power of two <= 32");
  const unsigned int lanes_bits = LANES == 32u ? 0xffffffffu : ((1u << LANES) - 1u);
  return lanes_bits << (LANES * ((thread_in_block % 32u) / LANES));
}

// A 64-lane output is the sum of its two warps' partials, even warp first.
__device__ inline float warp_pair_sum(float warp_even, float warp_odd) { return warp_even + warp_odd; }

// --- Gated DeltaNet gate math -----------------------------------------------------------

__device__ inline float gate_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

__device__ inline float gate_softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); }

// gate = -exp(A_log) * softplus(acc + dt_bias)
__device__ inline float gate_decay(float acc, float a_log, float dt_bias) {
  return -expf(a_log) * gate_softplus(acc + dt_bias);
}

// Fully unrolls the loop that follows on the device (a fixed trip count the compiler may otherwise
// leave as a loop, with a branch between loads it could overlap); nothing on the host.
#if defined(METRALE_DEVICE_PASS)
#define METRALE_UNROLL _Pragma("unroll")
#else
#define METRALE_UNROLL
#endif

// --- Dynamic shared memory ----------------------------------------------------------------

// The block's dynamic shared memory (the launch's dynamic_shared_bytes), 128-byte aligned. Past
// 48 KiB the CUDA backend opts the kernel in (cuFuncSetAttribute) before the launch. Its content
// is undefined until the block writes it (the host backend fills it with 0xCD).
__device__ inline unsigned char* dynamic_shared_memory() {
#if defined(METRALE_DEVICE_PASS)
  extern __shared__ __align__(128) unsigned char metrale_dynamic_shared[];
  return metrale_dynamic_shared;
#else
  return ::metrale::host::dynamic_shared_memory();
#endif
}

// --- Thread-block clusters (sm_90+, LaunchConfig::cluster_blocks: 1-D along grid.x) ----------
// A cluster's blocks run at the same time and may read each other's dynamic shared memory
// ("distributed shared memory"). Below sm_90 (no clusters) and without a cluster launch a block
// is a cluster of one: rank 0, count 1, cluster_sync() a block barrier, rank 0's memory its own.
// On the host each block of a cluster runs on its own OS thread (src/host/cluster_rendezvous.hpp).

// %cluster_ctarank: this block's rank in its cluster (blockIdx.x % cluster_blocks).
__device__ inline unsigned int cluster_cta_rank() {
#if defined(METRALE_DEVICE_PASS)
#if __CUDA_ARCH__ >= 900
  unsigned int rank;
  asm("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
  return rank;
#else
  return 0u;
#endif
#else
  return ::metrale::host::cluster_cta_rank();
#endif
}

// %cluster_nctarank: the blocks in this block's cluster.
__device__ inline unsigned int cluster_cta_count() {
#if defined(METRALE_DEVICE_PASS)
#if __CUDA_ARCH__ >= 900
  unsigned int count;
  asm("mov.u32 %0, %%cluster_nctarank;\n" : "=r"(count));
  return count;
#else
  return 1u;
#endif
#else
  return ::metrale::host::cluster_cta_count();
#endif
}

// Every thread of every block of the cluster arrives, then waits for all the others: the
// shared-memory writes before it are visible to the whole cluster after it (release/acquire).
// Every thread of the block must call it (.aligned). A block whose threads all exited counts as
// arrived, so a block must not exit while another still reads its shared memory: end with one.
#if defined(METRALE_DEVICE_PASS)
__device__ inline void cluster_sync() {
#if __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
  asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
#else
  __syncthreads();
#endif
}
#else
inline void cluster_sync(::metrale::host::CallSite site = ::metrale::host::CallSite::current()) {
  ::metrale::host::cluster_sync(site);
}
#endif

// The dynamic shared memory (dynamic_shared_memory()) of block `rank` of this cluster, as a
// generic pointer ordinary loads and stores use (mapa of the generic address). `rank` must be
// below cluster_cta_count(); below sm_90 only rank 0 (this block) exists.
__device__ inline unsigned char* cluster_peer_shared_memory(unsigned int rank) {
#if defined(METRALE_DEVICE_PASS)
  unsigned char* own = dynamic_shared_memory();
#if __CUDA_ARCH__ >= 900
  unsigned long long peer;
  asm("mapa.u64 %0, %1, %2;\n" : "=l"(peer) : "l"(reinterpret_cast<unsigned long long>(own)), "r"(rank));
  return reinterpret_cast<unsigned char*>(peer);
#else
  return rank == 0u ? own : nullptr;
#endif
#else
  return ::metrale::host::cluster_peer_shared_memory(rank);
#endif
}

// --- Tensor-core tiles (PTX wmma.m16n16k16, bf16 inputs, fp32 accumulators) ---------------

#if defined(METRALE_DEVICE_PASS)
// The 32-bit shared-window address of a pointer into shared memory. The builtin (an address-space
// cast the compiler sees through) lets it fold a tile's offset into a constant base, where a
// cvta inside each asm block cost a window lookup and 64-bit arithmetic per load.
__device__ inline unsigned int shared_address(const void* p) {
  return static_cast<unsigned int>(__cvta_generic_to_shared(p));
}
#endif

// Tile edge of one MMA: D[16][16] += A[16][16] B[16][16].
constexpr unsigned int kMmaTile = 16;

// A lane's share of a 16x16 bf16 operand tile (8 elements in 4 words), and of a 16x16 fp32
// accumulator tile (8 floats). Only the mma_* functions below read or write them.
struct MmaBf16Fragment {
  unsigned int reg[4];
};
struct MmaF32Fragment {
  float reg[8];
};

// Every element equal, so no lane layout is involved.
__device__ inline void mma_zero(MmaF32Fragment& acc) {
  for (unsigned int i = 0; i < 8u; ++i) {
    acc.reg[i] = 0.0f;
  }
}

// The whole warp, with the same `tile` and `ldm` (elements, a multiple of 8; `tile` 32-byte
// aligned, in shared memory): A[r][c] = tile[r * ldm + c]. The .shared form lets ptxas use
// ldmatrix; the generic form was plain loads through the generic path.
__device__ inline void mma_load_a_row(MmaBf16Fragment& a, const unsigned short* tile, unsigned int ldm) {
#if defined(METRALE_DEVICE_PASS)
  asm volatile("wmma.load.a.sync.aligned.row.m16n16k16.shared.bf16 {%0, %1, %2, %3}, [%4], %5;\n"
               : "=r"(a.reg[0]), "=r"(a.reg[1]), "=r"(a.reg[2]), "=r"(a.reg[3])
               : "r"(shared_address(tile)), "r"(ldm)
               : "memory");
#else
  ::metrale::host::tile_load_a_bf16_row(a.reg, tile, ldm);
#endif
}

// The whole warp, as mma_load_a_row (shared memory): B[k][n] = tile[n * ldm + k] (a row-major [n][k] weight
// tile is B column-major).
__device__ inline void mma_load_b_col(MmaBf16Fragment& b, const unsigned short* tile, unsigned int ldm) {
#if defined(METRALE_DEVICE_PASS)
  asm volatile("wmma.load.b.sync.aligned.col.m16n16k16.shared.bf16 {%0, %1, %2, %3}, [%4], %5;\n"
               : "=r"(b.reg[0]), "=r"(b.reg[1]), "=r"(b.reg[2]), "=r"(b.reg[3])
               : "r"(shared_address(tile)), "r"(ldm)
               : "memory");
#else
  ::metrale::host::tile_load_b_bf16_col(b.reg, tile, ldm);
#endif
}

// The whole warp: acc = A B + acc, fp32 accumulation (the order within a tile is the hardware's).
__device__ inline void mma_bf16_accumulate(MmaF32Fragment& acc, const MmaBf16Fragment& a, const MmaBf16Fragment& b) {
#if defined(METRALE_DEVICE_PASS)
  asm volatile(
      "wmma.mma.sync.aligned.row.col.m16n16k16.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11}, {%12, %13, %14, %15}, "
      "{%0, %1, %2, %3, %4, %5, %6, %7};\n"
      : "+f"(acc.reg[0]), "+f"(acc.reg[1]), "+f"(acc.reg[2]), "+f"(acc.reg[3]), "+f"(acc.reg[4]), "+f"(acc.reg[5]),
        "+f"(acc.reg[6]), "+f"(acc.reg[7])
      : "r"(a.reg[0]), "r"(a.reg[1]), "r"(a.reg[2]), "r"(a.reg[3]), "r"(b.reg[0]), "r"(b.reg[1]), "r"(b.reg[2]),
        "r"(b.reg[3]));
#else
  ::metrale::host::tile_mma_bf16_f32(acc.reg, a.reg, b.reg, acc.reg);
#endif
}

// The whole warp, as mma_load_a_row (ldm a multiple of 4 floats): tile[r * ldm + c] = D[r][c].
__device__ inline void mma_store_row(float* tile, const MmaF32Fragment& acc, unsigned int ldm) {
#if defined(METRALE_DEVICE_PASS)
  asm volatile("wmma.store.d.sync.aligned.row.m16n16k16.f32 [%0], {%1, %2, %3, %4, %5, %6, %7, %8}, %9;\n" ::"l"(tile),
               "f"(acc.reg[0]), "f"(acc.reg[1]), "f"(acc.reg[2]), "f"(acc.reg[3]), "f"(acc.reg[4]), "f"(acc.reg[5]),
               "f"(acc.reg[6]), "f"(acc.reg[7]), "r"(ldm)
               : "memory");
#else
  ::metrale::host::tile_store_f32_row(tile, acc.reg, ldm);
#endif
}

// --- Asynchronous global -> shared copies (cp.async, sm_80 and newer) ----------------------

// Fills 16 bytes of shared `dst` (16-byte aligned) without holding a register: the first
// `src_bytes` (at most 16) from global `src`, zeros after them; src is not read when src_bytes
// is 0. Why the byte count is an argument: a kernel that works it out once per copy slot
// saves a select per copy in its main loop.
__device__ inline void async_copy_16_bytes(void* dst, const void* src, unsigned int src_bytes) {
#if defined(METRALE_DEVICE_PASS)
  asm volatile(
      "{\n"
      "  .reg .u64 gsrc;\n"
      "  cvta.to.global.u64 gsrc, %1;\n"
      "  cp.async.cg.shared.global [%0], [gsrc], 16, %2;\n"
      "}\n" ::"r"(shared_address(dst)),
      "l"(src), "r"(src_bytes)
      : "memory");
#else
  // A constant-size copy for the whole vector: the profiled build traces it as one 16-byte load
  // (a copy of variable size would be a library call its instrumentation does not see).
  if (src_bytes >= 16u) {
    memcpy(dst, src, 16);
    METRALE_HOST_ASYNC_COPY(16u);
    return;
  }
  unsigned char* out = static_cast<unsigned char*>(dst);
  const unsigned char* in = static_cast<const unsigned char*>(src);
  for (unsigned int i = 0; i < 16u; ++i) {
    out[i] = i < src_bytes ? in[i] : static_cast<unsigned char>(0);
  }
  if (src_bytes != 0u) {
    METRALE_HOST_ASYNC_COPY(src_bytes);
  }
#endif
}

// Copies 16 bytes from global `src` to shared `dst` (both 16-byte aligned) without holding a
// register, or writes 16 zero bytes when `valid` is false (src is then not read).
__device__ inline void async_copy_16(void* dst, const void* src, bool valid) {
  async_copy_16_bytes(dst, src, valid ? 16u : 0u);
}

// Closes the group of copies this thread issued since the last commit.
__device__ inline void async_copy_commit() {
#if defined(METRALE_DEVICE_PASS)
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#else
  METRALE_HOST_ASYNC_COMMIT();
#endif
}

// Waits until at most PENDING of this thread's committed groups are still in flight (the host
// copies synchronously; a profiled host run records the groups, for the cost model's latency
// term). A __syncthreads() must follow before other threads read the data.
template <unsigned int PENDING>
__device__ inline void async_copy_wait() {
#if defined(METRALE_DEVICE_PASS)
  asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING) : "memory");
#else
  METRALE_HOST_ASYNC_WAIT(PENDING);
#endif
}

// --- FP8 (e4m3fn) group quantisation ------------------------------------------------------

// Elements per quantisation group and the largest finite e4m3fn value.
constexpr unsigned int kFp8GroupSize = 128;
constexpr float kFp8E4m3Max = 448.0f;
// The floor on a group's amax, so an all-zero group gets a finite scale.
constexpr float kFp8AmaxFloor = 1e-10f;

// s = amax / 448, amax floored at 1e-10.
__device__ inline float fp8_group_scale(float amax) { return fmaxf(amax, kFp8AmaxFloor) / kFp8E4m3Max; }

// The UE8M0 variant: the smallest power of two >= amax / 448, read off the float's bits (the
// quotient is a positive normal float for every amax >= 1e-10, so no subnormal case arises).
__device__ inline float fp8_group_scale_pow2(float amax) {
  const unsigned int bits = __float_as_uint(fp8_group_scale(amax));
  const unsigned int exponent = (bits >> 23) + ((bits & 0x007fffffu) != 0u ? 1u : 0u);
  return __uint_as_float(exponent << 23);
}

__device__ inline float fp8_scale_for(float amax, bool pow2_scale) {
  return pow2_scale ? fp8_group_scale_pow2(amax) : fp8_group_scale(amax);
}

// v / scale rounded to nearest even, as the IEEE division gives it, from the group's correctly
// rounded reciprocal `inv_scale` = __frcp_rn(scale): q0 = v * inv_scale is within 1 ulp, and one
// exact remainder step (r = v - q0 * scale, an fma) corrects it to the rounded quotient
// (Markstein's theorem: y = RN(1/b) and q0 within 1 ulp of a/b give RN(q0 + (a - b q0) y) =
// RN(a/b), barring underflow). A v or a quotient below 2^-100 may differ from the division's in
// its last bit (the remainder underflows), but every float below 2^-10 is the same e4m3 code (zero), so the
// codes are the division's; kernels_fp8_quotient_test compares both over every bf16 v. Why: 8 IEEE divisions per thread
// were most of the twin's instructions; this is 1 multiply and 2 fmas each, the reciprocal once per group.
__device__ inline float fp8_quotient(float v, float scale, float inv_scale) {
  const float q0 = __fmul_rn(v, inv_scale);
  const float remainder = __fmaf_rn(-q0, scale, v);
  // q0 is the answer where the correction would spoil it: a zero q0 keeps v's sign (+0 + -0 is
  // +0), and an infinite scale (a group holding an infinity) makes the remainder 0 * inf = NaN
  // where the division gives a signed zero, which q0 is; a NaN v or inf / inf is NaN in q0 too.
  return (remainder != remainder || q0 == 0.0f) ? q0 : __fmaf_rn(remainder, inv_scale, q0);
}

// e4m3fn code of v / scale: round to nearest even, saturate to +-448.
__device__ inline unsigned int fp8_e4m3_code(float v, float scale, float inv_scale) {
  return e4m3_from_float(fp8_quotient(v, scale, inv_scale));
}

// Largest |x| over the 8 bf16 of a 16-byte vector.
__device__ inline float bf16x8_abs_max(uint4 v) {
  float m = fabsf(bf16_low_to_float(v.x));
  m = fmaxf(m, fabsf(bf16_high_to_float(v.x)));
  m = fmaxf(m, fabsf(bf16_low_to_float(v.y)));
  m = fmaxf(m, fabsf(bf16_high_to_float(v.y)));
  m = fmaxf(m, fabsf(bf16_low_to_float(v.z)));
  m = fmaxf(m, fabsf(bf16_high_to_float(v.z)));
  m = fmaxf(m, fabsf(bf16_low_to_float(v.w)));
  m = fmaxf(m, fabsf(bf16_high_to_float(v.w)));
  return m;
}

// Two bf16 of one word -> two e4m3 codes, the low element in the low byte.
__device__ inline unsigned int fp8_pack_pair(unsigned int packed, float scale, float inv_scale) {
  return fp8_e4m3_code(bf16_low_to_float(packed), scale, inv_scale) |
         (fp8_e4m3_code(bf16_high_to_float(packed), scale, inv_scale) << 8);
}

// 8 bf16 -> 8 e4m3 codes in element order (byte i of the result = element i).
__device__ inline uint2 fp8_quantize_x8(uint4 v, float scale) {
  const float inv_scale = __frcp_rn(scale);
  uint2 out;
  out.x = fp8_pack_pair(v.x, scale, inv_scale) | (fp8_pack_pair(v.y, scale, inv_scale) << 16);
  out.y = fp8_pack_pair(v.z, scale, inv_scale) | (fp8_pack_pair(v.w, scale, inv_scale) << 16);
  return out;
}

}  // namespace kernels
}  // namespace metrale
