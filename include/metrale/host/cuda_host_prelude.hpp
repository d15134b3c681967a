// metrale/host/cuda_host_prelude.hpp: included before a kernel template to compile it with the
// host compiler. It makes the CUDA keywords, built-in variables and intrinsics the templates use
// mean the same on the CPU, where a block's threads run as fibers (see thread_context.hpp).
// Invariants:
// - The templates stay plain CUDA C++: nothing here asks them for an emulation branch. The one
//   exception is confined to templates/metrale_arith.cuh: inline PTX (wmma, cp.async) has no
//   host meaning, so its few wrappers call thread_context.hpp's tile collectives and plain copies
//   off the device.
// - The bf16/e4m3 types and the e4m3 conversion are the templates' own (templates/
//   metrale_types.cuh), the one definition NVRTC compiles too; only the vector types come from
//   CUDA's host-side headers. This file defines what those headers leave device-only.
// - __shared__ is `thread_local` (static at block scope, as `static __shared__` spells it too):
//   one OS thread runs one block at a time, all of that block's fibers on it, so thread-local
//   storage is per-block storage, like shared memory. The library's templates reach dynamic
//   shared memory through metrale::host::dynamic_shared_memory() (dynamic_shared_memory() in
//   metrale_arith.cuh). An engine's `extern __shared__ T name[]` (any type and name, several
//   aliasing one buffer as on a GPU, at block or namespace scope) is rewritten by the host JIT
//   (src/host/cuda_source_rewrite.hpp) into a thread-local pointer to the launch's dynamic shared
//   memory (extern_shared below), refreshed when each GPU thread starts (ExternSharedHook).
//   Compiled without the host JIT (the library's own units), `extern __shared__` does not link.
// - Atomics are std::atomic_ref operations (seq_cst), with CUDA's overloads and no others, on
//   global and shared memory alike: blocks run on several OS threads at once.
// - printf and assert in an engine's kernel are rewritten by the host JIT too: printf to a line
//   of the launch's log (kernel_printf), a failed assert to a failed launch (kernel_assert_fail).
// - Every sync point records its call site, so threads waiting at different barriers or
//   shuffles are reported instead of silently matched.
// - Include this only in translation units that instantiate host kernels: it defines macros
//   (threadIdx, __shared__, ...) and global functions (max, min) for the rest of the unit.
// - A translation unit that defines METRALE_HOST_PROFILED before including this is a profiled
//   one (compiled with the access-recording flags, cmake/profiled_host.cmake): its intrinsics
//   count their arithmetic (profile_counters.hpp), its asynchronous copies report their groups
//   (METRALE_HOST_ASYNC_*, used by metrale_arith.cuh) and live in another inline namespace, so the
//   plain and the profiled copies of one intrinsic never merge at link time. Such a unit must
//   include every standard header it needs before this one: the special functions become macros.
// Past ~400 lines: it is the device-side CUDA surface the templates and an engine's kernels may
// use (keywords, built-in variables, intrinsics, the atomic family, warp functions), which a
// host-JIT compile includes as one file before the kernel's source.
#pragma once
// The prelude exists to define CUDA's own reserved names (__global__, __shfl_xor_sync, ...).
// NOLINTBEGIN(bugprone-reserved-identifier)

#include <math.h>
#include <vector_functions.h>
#include <vector_types.h>

#include <atomic>
#include <bit>
#include <cmath>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <type_traits>

#include "metrale/host/thread_context.hpp"

// This unit compiles CUDA for the host backend: the library's templates take their host bodies
// even where the host JIT defines __CUDA_ARCH__ (templates/metrale_types.cuh, METRALE_DEVICE_PASS).
#define METRALE_HOST_BACKEND 1

#if defined(METRALE_HOST_PROFILED)
#define METRALE_HOST_COUNT(op) ::metrale::host::profile::count(::metrale::host::profile::Op::op)
#define METRALE_HOST_ASYNC_COPY(bytes) ::metrale::host::profile::async_copy(bytes)
#define METRALE_HOST_ASYNC_COMMIT() ::metrale::host::profile::async_commit()
#define METRALE_HOST_ASYNC_WAIT(pending) ::metrale::host::profile::async_wait(pending)
#define METRALE_HOST_PRELUDE_NAMESPACE metrale_host_profiled
#else
#define METRALE_HOST_COUNT(op) static_cast<void>(0)
#define METRALE_HOST_ASYNC_COPY(bytes) static_cast<void>(0)
#define METRALE_HOST_ASYNC_COMMIT() static_cast<void>(0)
#define METRALE_HOST_ASYNC_WAIT(pending) static_cast<void>(0)
#define METRALE_HOST_PRELUDE_NAMESPACE metrale_host_plain
#endif

// --- keywords -----------------------------------------------------------------------------
// A kernel is `inline`, so a template header may be included by several host translation units
// (NVRTC sees one). For the same reason a non-template __device__ helper must be __forceinline__
// or inline, as any function defined in a header; __device__ itself cannot add `inline`, since
// `__device__ inline` would then spell a duplicate `inline`. __forceinline__ becomes plain
// inline: always_inline buys nothing on the host and can refuse to compile deep helper chains.
#undef __global__
#define __global__ inline
#undef __device__
#define __device__
#undef __host__
#define __host__
#undef __forceinline__
#define __forceinline__ inline
#undef __shared__
#define __shared__ thread_local
#undef __constant__
#define __constant__
#undef __managed__
#define __managed__
#undef __grid_constant__
#define __grid_constant__
// Only a hint; empty rather than __attribute__((noinline)), which would break the standard
// library's own __attribute__((__noinline__)) in headers included after this one.
#undef __noinline__
#define __noinline__
#define __launch_bounds__(...)
// __restrict__ is a GCC/Clang keyword already.

// What nvcc's implicit headers give a kernel besides the above (NULL and size_t come with
// <cstddef>, printf with <cstdio>).
using uint = unsigned int;
using ushort = unsigned short;

// --- built-in variables -------------------------------------------------------------------
#define threadIdx (::metrale::host::detail::coordinates("threadIdx").thread_idx)
#define blockIdx (::metrale::host::detail::coordinates("blockIdx").block_idx)
#define blockDim (::metrale::host::detail::coordinates("blockDim").block_dim)
#define gridDim (::metrale::host::detail::coordinates("gridDim").grid_dim)
inline constexpr int warpSize = 32;

inline namespace METRALE_HOST_PRELUDE_NAMESPACE {

// --- barriers -----------------------------------------------------------------------------
inline void __syncthreads(::metrale::host::CallSite site = ::metrale::host::CallSite::current()) {
  ::metrale::host::sync_threads(site);
}
inline int __syncthreads_count(int predicate, ::metrale::host::CallSite site = ::metrale::host::CallSite::current()) {
  return ::metrale::host::sync_threads_count(site, predicate);
}
inline int __syncthreads_and(int predicate, ::metrale::host::CallSite site = ::metrale::host::CallSite::current()) {
  const dim3& block = ::metrale::host::detail::coordinates("__syncthreads_and").block_dim;
  return ::metrale::host::sync_threads_count(site, predicate) == static_cast<int>(block.x * block.y * block.z) ? 1 : 0;
}
inline int __syncthreads_or(int predicate, ::metrale::host::CallSite site = ::metrale::host::CallSite::current()) {
  return ::metrale::host::sync_threads_count(site, predicate) != 0 ? 1 : 0;
}
inline void __syncwarp(unsigned mask = 0xffffffffU,
                       ::metrale::host::CallSite site = ::metrale::host::CallSite::current()) {
  ::metrale::host::warp_sync({::metrale::host::WarpOp::kSyncWarp, mask, 0, 0, warpSize, site});
}
// Memory fences: the atomics below are seq_cst, and a block's fibers share one OS thread.
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_signal_fence(std::memory_order_seq_cst); }
inline void __threadfence_system() { std::atomic_thread_fence(std::memory_order_seq_cst); }

// __trap() and __brkpt(): the launch fails naming the thread and the call's line.
[[noreturn]] inline void __trap(::metrale::host::CallSite site = ::metrale::host::CallSite::current()) {
  ::metrale::host::kernel_trap("__trap()", site);
  std::abort();  // not reached: kernel_trap throws
}
[[noreturn]] inline void __brkpt(::metrale::host::CallSite site = ::metrale::host::CallSite::current()) {
  ::metrale::host::kernel_trap("__brkpt()", site);
  std::abort();
}
// A GPU thread cannot be put to sleep on a fiber that is never preempted: nothing to wait for.
inline void __nanosleep(unsigned /*ns*/) {}
// A monotonic count (nanoseconds here; a GPU counts its SM's cycles).
inline long long clock64() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<long long>(now.tv_sec) * 1000000000LL + now.tv_nsec;
}

}  // namespace METRALE_HOST_PRELUDE_NAMESPACE

// --- warp shuffles and votes --------------------------------------------------------------
namespace metrale::host::detail {

template <typename T>
T warp_shuffle(WarpOp op, unsigned mask, T var, int lane_arg, int width, const ::metrale::host::CallSite& site) {
  // The bytes move, as a GPU moves a wider value by several 32-bit shuffles: any trivially
  // copyable type (uint4, double2, a struct), and the standard-layout CUDA types whose host
  // definitions declare their own copies (__half2, __nv_bfloat162: two 16-bit words).
  static_assert(
      std::is_trivially_copyable_v<T> || (std::is_standard_layout_v<T> && std::is_trivially_destructible_v<T>),
      "a warp shuffle moves the bytes of a trivially copyable (or standard-layout) value");
  constexpr std::size_t kWords = (sizeof(T) + sizeof(std::uint64_t) - 1) / sizeof(std::uint64_t);
  std::uint64_t bits[kWords] = {};
  std::memcpy(static_cast<void*>(bits), static_cast<const void*>(&var), sizeof(T));
  // One collective per 64 bits, all at the caller's site: the lanes meet there once per word.
  for (std::uint64_t& word : bits) {
    word = warp_sync({op, mask, word, lane_arg, width, site});
  }
  T out = var;
  std::memcpy(static_cast<void*>(&out), static_cast<const void*>(bits), sizeof(T));
  return out;
}

}  // namespace metrale::host::detail

inline namespace METRALE_HOST_PRELUDE_NAMESPACE {

template <typename T>
T __shfl_sync(unsigned mask, T var, int src_lane, int width = warpSize,
              ::metrale::host::CallSite site = ::metrale::host::CallSite::current()) {
  METRALE_HOST_COUNT(kShuffle);
  return ::metrale::host::detail::warp_shuffle(::metrale::host::WarpOp::kShflIdx, mask, var, src_lane, width, site);
}
template <typename T>
T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = warpSize,
                 ::metrale::host::CallSite site = ::metrale::host::CallSite::current()) {
  METRALE_HOST_COUNT(kShuffle);
  return ::metrale::host::detail::warp_shuffle(::metrale::host::WarpOp::kShflUp, mask, var, static_cast<int>(delta),
                                               width, site);
}
template <typename T>
T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize,
                   ::metrale::host::CallSite site = ::metrale::host::CallSite::current()) {
  METRALE_HOST_COUNT(kShuffle);
  return ::metrale::host::detail::warp_shuffle(::metrale::host::WarpOp::kShflDown, mask, var, static_cast<int>(delta),
                                               width, site);
}
template <typename T>
T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = warpSize,
                  ::metrale::host::CallSite site = ::metrale::host::CallSite::current()) {
  METRALE_HOST_COUNT(kShuffle);
  return ::metrale::host::detail::warp_shuffle(::metrale::host::WarpOp::kShflXor, mask, var, lane_mask, width, site);
}
inline unsigned __ballot_sync(unsigned mask, int predicate,
                              ::metrale::host::CallSite site = ::metrale::host::CallSite::current()) {
  METRALE_HOST_COUNT(kVote);
  return static_cast<unsigned>(::metrale::host::warp_sync(
      {::metrale::host::WarpOp::kBallot, mask, predicate != 0 ? 1U : 0U, 0, warpSize, site}));
}
inline int __any_sync(unsigned mask, int predicate,
                      ::metrale::host::CallSite site = ::metrale::host::CallSite::current()) {
  METRALE_HOST_COUNT(kVote);
  return static_cast<int>(
      ::metrale::host::warp_sync({::metrale::host::WarpOp::kAny, mask, predicate != 0 ? 1U : 0U, 0, warpSize, site}));
}
inline int __all_sync(unsigned mask, int predicate,
                      ::metrale::host::CallSite site = ::metrale::host::CallSite::current()) {
  METRALE_HOST_COUNT(kVote);
  return static_cast<int>(
      ::metrale::host::warp_sync({::metrale::host::WarpOp::kAll, mask, predicate != 0 ? 1U : 0U, 0, warpSize, site}));
}
// The lanes of the warp that reach this call together (thread_context.hpp's kActiveMask).
inline unsigned __activemask(::metrale::host::CallSite site = ::metrale::host::CallSite::current()) {
  METRALE_HOST_COUNT(kVote);
  return static_cast<unsigned>(
      ::metrale::host::warp_sync({::metrale::host::WarpOp::kActiveMask, 0xffffffffU, 0, 0, warpSize, site}));
}
template <typename T>
requires(std::is_arithmetic_v<T> && sizeof(T) >= 4) unsigned __match_any_sync(
    unsigned mask, T value, ::metrale::host::CallSite site = ::metrale::host::CallSite::current()) {
  METRALE_HOST_COUNT(kVote);
  std::uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  return static_cast<unsigned>(
      ::metrale::host::warp_sync({::metrale::host::WarpOp::kMatchAny, mask, bits, 0, warpSize, site}));
}
template <typename T>
requires(std::is_arithmetic_v<T> && sizeof(T) >= 4) unsigned __match_all_sync(
    unsigned mask, T value, int* pred, ::metrale::host::CallSite site = ::metrale::host::CallSite::current()) {
  METRALE_HOST_COUNT(kVote);
  std::uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  const auto same = static_cast<unsigned>(
      ::metrale::host::warp_sync({::metrale::host::WarpOp::kMatchAll, mask, bits, 0, warpSize, site}));
  *pred = same != 0 ? 1 : 0;
  return same;
}

}  // namespace METRALE_HOST_PRELUDE_NAMESPACE

namespace metrale::host::detail {
inline std::uint32_t warp_reduce(WarpOp op, unsigned mask, std::uint32_t value, bool is_signed,
                                 const ::metrale::host::CallSite& site) {
  return static_cast<std::uint32_t>(warp_sync({op, mask, value, is_signed ? 1 : 0, 32, site}));
}
}  // namespace metrale::host::detail

inline namespace METRALE_HOST_PRELUDE_NAMESPACE {

// __reduce_*_sync (sm_80): int and unsigned for add, min and max; unsigned for and, or, xor.
#define METRALE_HOST_WARP_REDUCE(name, op, type, is_signed)                                                            \
  inline type name(unsigned mask, type value, ::metrale::host::CallSite site = ::metrale::host::CallSite::current()) { \
    METRALE_HOST_COUNT(kVote);                                                                                         \
    return static_cast<type>(::metrale::host::detail::warp_reduce(                                                     \
        ::metrale::host::WarpOp::op, mask, static_cast<std::uint32_t>(value), is_signed, site));                       \
  }
METRALE_HOST_WARP_REDUCE(__reduce_add_sync, kReduceAdd, unsigned, false)
METRALE_HOST_WARP_REDUCE(__reduce_add_sync, kReduceAdd, int, true)
METRALE_HOST_WARP_REDUCE(__reduce_min_sync, kReduceMin, unsigned, false)
METRALE_HOST_WARP_REDUCE(__reduce_min_sync, kReduceMin, int, true)
METRALE_HOST_WARP_REDUCE(__reduce_max_sync, kReduceMax, unsigned, false)
METRALE_HOST_WARP_REDUCE(__reduce_max_sync, kReduceMax, int, true)
METRALE_HOST_WARP_REDUCE(__reduce_and_sync, kReduceAnd, unsigned, false)
METRALE_HOST_WARP_REDUCE(__reduce_or_sync, kReduceOr, unsigned, false)
METRALE_HOST_WARP_REDUCE(__reduce_xor_sync, kReduceXor, unsigned, false)
#undef METRALE_HOST_WARP_REDUCE

// --- arithmetic intrinsics ----------------------------------------------------------------
// The host's float arithmetic is IEEE round-to-nearest-even, so the _rn forms are the plain ones.
inline float __fmaf_rn(float a, float b, float c) {
  METRALE_HOST_COUNT(kFma);
  return std::fma(a, b, c);
}
inline float __fadd_rn(float a, float b) {
  METRALE_HOST_COUNT(kAdd);
  return a + b;
}
inline float __fmul_rn(float a, float b) {
  METRALE_HOST_COUNT(kMul);
  return a * b;
}
inline float __fdiv_rn(float a, float b) {
  METRALE_HOST_COUNT(kDiv);
  return a / b;
}
inline float __fdividef(float a, float b) {
  METRALE_HOST_COUNT(kDiv);
  return a / b;
}
inline float __frcp_rn(float a) {
  METRALE_HOST_COUNT(kDiv);
  return 1.0F / a;
}
inline float metrale_host_expf(float a) {
  METRALE_HOST_COUNT(kSpecial);
  return std::exp(a);
}
inline float metrale_host_logf(float a) {
  METRALE_HOST_COUNT(kSpecial);
  return std::log(a);
}
inline float metrale_host_powf(float a, float b) {
  METRALE_HOST_COUNT(kSpecial);
  return std::pow(a, b);
}
inline float rsqrtf(float a) {
  METRALE_HOST_COUNT(kSpecial);
  return 1.0F / std::sqrt(a);
}
inline float __saturatef(float a) { return std::fmin(std::fmax(a, 0.0F), 1.0F); }
inline int __float2int_rn(float a) { return static_cast<int>(std::nearbyint(a)); }
inline unsigned __float2uint_rn(float a) { return static_cast<unsigned>(std::nearbyint(a)); }

inline float __uint_as_float(unsigned bits) { return std::bit_cast<float>(bits); }
inline unsigned __float_as_uint(float value) { return std::bit_cast<unsigned>(value); }
inline float __int_as_float(int bits) { return std::bit_cast<float>(bits); }
inline int __float_as_int(float value) { return std::bit_cast<int>(value); }

inline float metrale_host_sinf(float a) {
  METRALE_HOST_COUNT(kSpecial);
  return std::sin(a);
}
inline float metrale_host_cosf(float a) {
  METRALE_HOST_COUNT(kSpecial);
  return std::cos(a);
}
inline float metrale_host_tanf(float a) {
  METRALE_HOST_COUNT(kSpecial);
  return std::tan(a);
}
inline void metrale_host_sincosf(float a, float* s, float* c) {
  METRALE_HOST_COUNT(kSpecial);
  *s = std::sin(a);
  *c = std::cos(a);
}
inline float metrale_host_exp10f(float a) {
  METRALE_HOST_COUNT(kSpecial);
  return std::pow(10.0F, a);
}
inline float metrale_host_log2f(float a) {
  METRALE_HOST_COUNT(kSpecial);
  return std::log2(a);
}
inline float metrale_host_log10f(float a) {
  METRALE_HOST_COUNT(kSpecial);
  return std::log10(a);
}
inline float __fsqrt_rn(float a) {
  METRALE_HOST_COUNT(kSpecial);
  return std::sqrt(a);
}
inline float __frsqrt_rn(float a) {
  METRALE_HOST_COUNT(kSpecial);
  return 1.0F / std::sqrt(a);
}
inline float __fsub_rn(float a, float b) {
  METRALE_HOST_COUNT(kAdd);
  return a - b;
}
inline float fdividef(float a, float b) {
  METRALE_HOST_COUNT(kDiv);
  return a / b;
}
inline double rsqrt(double a) { return 1.0 / std::sqrt(a); }
inline float rcbrtf(float a) { return 1.0F / std::cbrt(a); }
inline float sinpif(float a) { return std::sin(3.14159265358979323846F * a); }
inline float cospif(float a) { return std::cos(3.14159265358979323846F * a); }
inline void sincospif(float a, float* s, float* c) {
  *s = sinpif(a);
  *c = cospif(a);
}
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __ddiv_rn(double a, double b) { return a / b; }
inline double __drcp_rn(double a) { return 1.0 / a; }
inline double __dsqrt_rn(double a) { return std::sqrt(a); }
inline double __fma_rn(double a, double b, double c) { return std::fma(a, b, c); }

// glibc declares these names too (aliases of its own expf, ...), so a kernel's call would be
// ambiguous between the two; the macros send it to the prelude's.
#define __expf(a) metrale_host_expf(a)
#define __logf(a) metrale_host_logf(a)
#define __powf(a, b) metrale_host_powf(a, b)
#define __sinf(a) metrale_host_sinf(a)
#define __cosf(a) metrale_host_cosf(a)
#define __tanf(a) metrale_host_tanf(a)
#define __sincosf(a, s, c) metrale_host_sincosf(a, s, c)
#define __exp10f(a) metrale_host_exp10f(a)
#define __log2f(a) metrale_host_log2f(a)
#define __log10f(a) metrale_host_log10f(a)

// Conversions: _rn to nearest even, _rz toward zero, _rd down, _ru up.
inline int __float2int_rz(float a) { return static_cast<int>(a); }
inline int __float2int_rd(float a) { return static_cast<int>(std::floor(a)); }
inline int __float2int_ru(float a) { return static_cast<int>(std::ceil(a)); }
inline unsigned __float2uint_rz(float a) { return static_cast<unsigned>(a); }
inline unsigned __float2uint_rd(float a) { return static_cast<unsigned>(std::floor(a)); }
inline unsigned __float2uint_ru(float a) { return static_cast<unsigned>(std::ceil(a)); }
inline long long __float2ll_rn(float a) { return static_cast<long long>(std::nearbyint(a)); }
inline long long __float2ll_rz(float a) { return static_cast<long long>(a); }
inline float __int2float_rn(int a) { return static_cast<float>(a); }
inline float __uint2float_rn(unsigned a) { return static_cast<float>(a); }
inline float __ll2float_rn(long long a) { return static_cast<float>(a); }
inline float __double2float_rn(double a) { return static_cast<float>(a); }
inline int __double2int_rn(double a) { return static_cast<int>(std::nearbyint(a)); }
inline int __double2int_rz(double a) { return static_cast<int>(a); }
inline double __int2double_rn(int a) { return a; }
inline long long __double_as_longlong(double a) { return std::bit_cast<long long>(a); }
inline double __longlong_as_double(long long a) { return std::bit_cast<double>(a); }
inline int __double2hiint(double a) { return static_cast<int>(std::bit_cast<unsigned long long>(a) >> 32U); }
inline int __double2loint(double a) { return static_cast<int>(std::bit_cast<unsigned long long>(a) & 0xffffffffULL); }
inline double __hiloint2double(int hi, int lo) {
  return std::bit_cast<double>(static_cast<unsigned long long>(static_cast<unsigned>(hi)) << 32U |
                               static_cast<unsigned>(lo));
}

// --- integer intrinsics -------------------------------------------------------------------
inline int __popc(unsigned x) { return std::popcount(x); }
inline int __popcll(unsigned long long x) { return std::popcount(x); }
inline int __clz(int x) { return std::countl_zero(static_cast<unsigned>(x)); }
inline int __clzll(long long x) { return std::countl_zero(static_cast<unsigned long long>(x)); }
inline int __ffs(int x) { return x == 0 ? 0 : std::countr_zero(static_cast<unsigned>(x)) + 1; }
inline int __ffsll(long long x) { return x == 0 ? 0 : std::countr_zero(static_cast<unsigned long long>(x)) + 1; }
inline unsigned __brev(unsigned x) {
  x = (x >> 1U & 0x55555555U) | (x & 0x55555555U) << 1U;
  x = (x >> 2U & 0x33333333U) | (x & 0x33333333U) << 2U;
  x = (x >> 4U & 0x0f0f0f0fU) | (x & 0x0f0f0f0fU) << 4U;
  x = (x >> 8U & 0x00ff00ffU) | (x & 0x00ff00ffU) << 8U;
  return x >> 16U | x << 16U;
}
inline unsigned long long __brevll(unsigned long long x) {
  return static_cast<unsigned long long>(__brev(static_cast<unsigned>(x))) << 32U |
         __brev(static_cast<unsigned>(x >> 32U));
}
// Byte n of the result is byte (s >> 4n) & 7 of the eight bytes y:x (x the low four).
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  const unsigned long long bytes = static_cast<unsigned long long>(y) << 32U | x;
  unsigned out = 0;
  for (unsigned n = 0; n < 4; ++n) {
    const unsigned pick = s >> (4U * n) & 7U;
    out |= static_cast<unsigned>(bytes >> (8U * pick) & 0xffU) << (8U * n);
  }
  return out;
}
// hi:lo shifted by shift mod 32 (the _lc/_rc forms clamp shift to 32 instead).
inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned shift) {
  const unsigned long long both = static_cast<unsigned long long>(hi) << 32U | lo;
  return static_cast<unsigned>((both << (shift & 31U)) >> 32U);
}
inline unsigned __funnelshift_lc(unsigned lo, unsigned hi, unsigned shift) {
  const unsigned long long both = static_cast<unsigned long long>(hi) << 32U | lo;
  return static_cast<unsigned>((both << std::min(shift, 32U)) >> 32U);
}
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned shift) {
  const unsigned long long both = static_cast<unsigned long long>(hi) << 32U | lo;
  return static_cast<unsigned>(both >> (shift & 31U));
}
inline unsigned __funnelshift_rc(unsigned lo, unsigned hi, unsigned shift) {
  const unsigned long long both = static_cast<unsigned long long>(hi) << 32U | lo;
  return static_cast<unsigned>(both >> std::min(shift, 32U));
}
// The 24-bit products: the low 32 bits of the product of the operands' low 24 bits.
inline int __mul24(int x, int y) {
  const auto low24 = [](int v) {
    return static_cast<long long>(static_cast<int>(static_cast<unsigned>(v) << 8U) >> 8);
  };
  return static_cast<int>(static_cast<unsigned long long>(low24(x) * low24(y)) & 0xffffffffULL);
}
inline unsigned __umul24(unsigned x, unsigned y) { return (x & 0xffffffU) * (y & 0xffffffU); }
inline int __mulhi(int x, int y) { return static_cast<int>(static_cast<long long>(x) * y >> 32); }
inline unsigned __umulhi(unsigned x, unsigned y) {
  return static_cast<unsigned>(static_cast<unsigned long long>(x) * y >> 32U);
}
inline unsigned long long __umul64hi(unsigned long long x, unsigned long long y) {
  const unsigned long long x_lo = x & 0xffffffffULL;
  const unsigned long long x_hi = x >> 32U;
  const unsigned long long y_lo = y & 0xffffffffULL;
  const unsigned long long y_hi = y >> 32U;
  const unsigned long long lo_hi = x_lo * y_hi;
  const unsigned long long hi_lo = x_hi * y_lo;
  const unsigned long long carry = ((x_lo * y_lo >> 32U) + (lo_hi & 0xffffffffULL) + (hi_lo & 0xffffffffULL)) >> 32U;
  return x_hi * y_hi + (lo_hi >> 32U) + (hi_lo >> 32U) + carry;
}
inline long long __mul64hi(long long x, long long y) {
  const auto ux = static_cast<unsigned long long>(x);
  const auto uy = static_cast<unsigned long long>(y);
  return static_cast<long long>(__umul64hi(ux, uy) - (x < 0 ? uy : 0ULL) - (y < 0 ? ux : 0ULL));
}
inline int __hadd(int x, int y) { return static_cast<int>((static_cast<long long>(x) + y) >> 1); }
inline int __rhadd(int x, int y) { return static_cast<int>((static_cast<long long>(x) + y + 1) >> 1); }
inline unsigned __uhadd(unsigned x, unsigned y) {
  return static_cast<unsigned>((static_cast<unsigned long long>(x) + y) >> 1U);
}
inline unsigned __urhadd(unsigned x, unsigned y) {
  return static_cast<unsigned>((static_cast<unsigned long long>(x) + y + 1U) >> 1U);
}
inline unsigned __sad(int x, int y, unsigned z) {
  return z + static_cast<unsigned>(x > y ? static_cast<long long>(x) - y : static_cast<long long>(y) - x);
}
inline unsigned __usad(unsigned x, unsigned y, unsigned z) { return z + (x > y ? x - y : y - x); }
inline unsigned umin(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned umax(unsigned a, unsigned b) { return a < b ? b : a; }
inline long long llmin(long long a, long long b) { return a < b ? a : b; }
inline long long llmax(long long a, long long b) { return a < b ? b : a; }
inline unsigned long long ullmin(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline unsigned long long ullmax(unsigned long long a, unsigned long long b) { return a < b ? b : a; }

// CUDA's max/min overloads: integers by the usual arithmetic conversions, floats like fmaxf.
template <typename A, typename B>
requires(std::is_arithmetic_v<A>&& std::is_arithmetic_v<B>) constexpr std::common_type_t<A, B> max(A a, B b) {
  using C = std::common_type_t<A, B>;
  if constexpr (std::is_floating_point_v<C>) {
    return std::fmax(static_cast<C>(a), static_cast<C>(b));
  } else {
    return static_cast<C>(a) < static_cast<C>(b) ? static_cast<C>(b) : static_cast<C>(a);
  }
}
template <typename A, typename B>
requires(std::is_arithmetic_v<A>&& std::is_arithmetic_v<B>) constexpr std::common_type_t<A, B> min(A a, B b) {
  using C = std::common_type_t<A, B>;
  if constexpr (std::is_floating_point_v<C>) {
    return std::fmin(static_cast<C>(a), static_cast<C>(b));
  } else {
    return static_cast<C>(b) < static_cast<C>(a) ? static_cast<C>(b) : static_cast<C>(a);
  }
}

// --- memory -------------------------------------------------------------------------------
// The cache-hinted loads and stores are plain ones on the host.
#define METRALE_HOST_PLAIN_LOAD(name) \
  template <typename T>               \
  T name(const T* address) {          \
    return *address;                  \
  }
METRALE_HOST_PLAIN_LOAD(__ldg)
METRALE_HOST_PLAIN_LOAD(__ldcg)
METRALE_HOST_PLAIN_LOAD(__ldca)
METRALE_HOST_PLAIN_LOAD(__ldcs)
METRALE_HOST_PLAIN_LOAD(__ldlu)
METRALE_HOST_PLAIN_LOAD(__ldcv)
#undef METRALE_HOST_PLAIN_LOAD
#define METRALE_HOST_PLAIN_STORE(name) \
  template <typename T>                \
  void name(T* address, T value) {     \
    *address = value;                  \
  }
METRALE_HOST_PLAIN_STORE(__stcg)
METRALE_HOST_PLAIN_STORE(__stcs)
METRALE_HOST_PLAIN_STORE(__stwb)
METRALE_HOST_PLAIN_STORE(__stwt)
#undef METRALE_HOST_PLAIN_STORE

}  // namespace METRALE_HOST_PRELUDE_NAMESPACE

// --- atomics ------------------------------------------------------------------------------
// CUDA's overloads, each a std::atomic_ref operation (seq_cst), so ThreadSanitizer sees them as
// atomics. A block's fibers share one OS thread and run one at a time between sync points, so a
// shared-memory race within a block cannot lose an update here; blocks run on several OS threads
// at once, so a race on global memory can.
namespace metrale::host::detail {
// *address = next(old) atomically; returns old.
template <typename T, typename Next>
T atomic_update(T* address, Next next) {
  std::atomic_ref<T> ref(*address);
  T seen = ref.load();
  while (!ref.compare_exchange_weak(seen, next(seen))) {
  }
  return seen;
}
}  // namespace metrale::host::detail

inline namespace METRALE_HOST_PRELUDE_NAMESPACE {

#define METRALE_HOST_ATOMIC_FETCH(name, type, member) \
  inline type name(type* address, type value) { return std::atomic_ref<type>(*address).member(value); }
METRALE_HOST_ATOMIC_FETCH(atomicAdd, int, fetch_add)
METRALE_HOST_ATOMIC_FETCH(atomicAdd, unsigned int, fetch_add)
METRALE_HOST_ATOMIC_FETCH(atomicAdd, unsigned long long, fetch_add)
METRALE_HOST_ATOMIC_FETCH(atomicAdd, float, fetch_add)
METRALE_HOST_ATOMIC_FETCH(atomicAdd, double, fetch_add)
METRALE_HOST_ATOMIC_FETCH(atomicSub, int, fetch_sub)
METRALE_HOST_ATOMIC_FETCH(atomicSub, unsigned int, fetch_sub)
METRALE_HOST_ATOMIC_FETCH(atomicExch, int, exchange)
METRALE_HOST_ATOMIC_FETCH(atomicExch, unsigned int, exchange)
METRALE_HOST_ATOMIC_FETCH(atomicExch, unsigned long long, exchange)
METRALE_HOST_ATOMIC_FETCH(atomicExch, float, exchange)
METRALE_HOST_ATOMIC_FETCH(atomicAnd, int, fetch_and)
METRALE_HOST_ATOMIC_FETCH(atomicAnd, unsigned int, fetch_and)
METRALE_HOST_ATOMIC_FETCH(atomicAnd, unsigned long long, fetch_and)
METRALE_HOST_ATOMIC_FETCH(atomicOr, int, fetch_or)
METRALE_HOST_ATOMIC_FETCH(atomicOr, unsigned int, fetch_or)
METRALE_HOST_ATOMIC_FETCH(atomicOr, unsigned long long, fetch_or)
METRALE_HOST_ATOMIC_FETCH(atomicXor, int, fetch_xor)
METRALE_HOST_ATOMIC_FETCH(atomicXor, unsigned int, fetch_xor)
METRALE_HOST_ATOMIC_FETCH(atomicXor, unsigned long long, fetch_xor)
#undef METRALE_HOST_ATOMIC_FETCH

#define METRALE_HOST_ATOMIC_MIN_MAX(type)                                                                            \
  inline type atomicMin(type* address, type value) {                                                                 \
    return ::metrale::host::detail::atomic_update(address, [value](type old) { return value < old ? value : old; }); \
  }                                                                                                                  \
  inline type atomicMax(type* address, type value) {                                                                 \
    return ::metrale::host::detail::atomic_update(address, [value](type old) { return old < value ? value : old; }); \
  }
METRALE_HOST_ATOMIC_MIN_MAX(int)
METRALE_HOST_ATOMIC_MIN_MAX(unsigned int)
METRALE_HOST_ATOMIC_MIN_MAX(unsigned long long)
METRALE_HOST_ATOMIC_MIN_MAX(long long)
#undef METRALE_HOST_ATOMIC_MIN_MAX

#define METRALE_HOST_ATOMIC_CAS(type)                                        \
  inline type atomicCAS(type* address, type compare, type value) {           \
    std::atomic_ref<type>(*address).compare_exchange_strong(compare, value); \
    return compare;                                                          \
  }
METRALE_HOST_ATOMIC_CAS(int)
METRALE_HOST_ATOMIC_CAS(unsigned int)
METRALE_HOST_ATOMIC_CAS(unsigned long long)
METRALE_HOST_ATOMIC_CAS(unsigned short)
#undef METRALE_HOST_ATOMIC_CAS

// ((old >= limit) ? 0 : (old + 1)) and (((old == 0) || (old > limit)) ? limit : (old - 1)), as
// CUDA defines them.
inline unsigned int atomicInc(unsigned int* address, unsigned int limit) {
  return ::metrale::host::detail::atomic_update(address,
                                                [limit](unsigned int old) { return old >= limit ? 0U : old + 1U; });
}
inline unsigned int atomicDec(unsigned int* address, unsigned int limit) {
  return ::metrale::host::detail::atomic_update(
      address, [limit](unsigned int old) { return old == 0U || old > limit ? limit : old - 1U; });
}

// The _block and _system scopes: the same operations (every atomic here is system-wide seq_cst).
#define METRALE_HOST_ATOMIC_SCOPES(name)                      \
  template <typename... Args>                                 \
  auto name##_block(Args... args)->decltype(name(args...)) {  \
    return name(args...);                                     \
  }                                                           \
  template <typename... Args>                                 \
  auto name##_system(Args... args)->decltype(name(args...)) { \
    return name(args...);                                     \
  }
METRALE_HOST_ATOMIC_SCOPES(atomicAdd)
METRALE_HOST_ATOMIC_SCOPES(atomicSub)
METRALE_HOST_ATOMIC_SCOPES(atomicExch)
METRALE_HOST_ATOMIC_SCOPES(atomicMin)
METRALE_HOST_ATOMIC_SCOPES(atomicMax)
METRALE_HOST_ATOMIC_SCOPES(atomicInc)
METRALE_HOST_ATOMIC_SCOPES(atomicDec)
METRALE_HOST_ATOMIC_SCOPES(atomicCAS)
METRALE_HOST_ATOMIC_SCOPES(atomicAnd)
METRALE_HOST_ATOMIC_SCOPES(atomicOr)
METRALE_HOST_ATOMIC_SCOPES(atomicXor)
#undef METRALE_HOST_ATOMIC_SCOPES

}  // namespace METRALE_HOST_PRELUDE_NAMESPACE

// --- what the host JIT rewrites an engine's source to (src/host/cuda_source_rewrite.hpp) -----
namespace metrale::host::detail {

// One `extern __shared__` pointer's refresh, in a list the kernel's entry walks before it runs
// each GPU thread (host_jit_unit's invoke): the pointer is thread-local and the launch's buffer
// may differ from the last one this OS thread ran. Hooks are only ever added (a namespace-scope
// one at load, a block-scope one when its function first runs, possibly on several OS threads at
// once), through the compiler's atomics: a profiled object instruments std::atomic's functions.
struct ExternSharedHook;
__attribute__((visibility("hidden"))) inline ExternSharedHook* extern_shared_hooks = nullptr;
struct ExternSharedHook {
  void (*refresh)() = nullptr;
  ExternSharedHook* next = nullptr;
  explicit ExternSharedHook(void (*fn)()) : refresh(fn) {
    next = __atomic_load_n(&extern_shared_hooks, __ATOMIC_ACQUIRE);
    while (!__atomic_compare_exchange_n(&extern_shared_hooks, &next, this, true, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    }
  }
};
inline void refresh_extern_shared() {
  for (const ExternSharedHook* hook = __atomic_load_n(&extern_shared_hooks, __ATOMIC_ACQUIRE); hook != nullptr;
       hook = hook->next) {
    hook->refresh();
  }
}
template <typename Pointer>
Pointer extern_shared() {
  return reinterpret_cast<Pointer>(::metrale::host::dynamic_shared_base());
}

// A kernel's printf: formatted here, one line of the launch's log.
__attribute__((format(printf, 1, 2))) inline int kernel_printf(const char* format, ...) {
  char small[512];
  std::va_list args;
  va_start(args, format);
  std::va_list again;
  va_copy(again, args);
  const int length = std::vsnprintf(small, sizeof small, format, args);
  va_end(args);
  if (length < 0) {
    va_end(again);
    return length;
  }
  if (static_cast<std::size_t>(length) < sizeof small) {
    va_end(again);
    ::metrale::host::kernel_print(small);
    return length;
  }
  std::string text(static_cast<std::size_t>(length) + 1, '\0');
  std::vsnprintf(text.data(), text.size(), format, again);
  va_end(again);
  ::metrale::host::kernel_print(text.c_str());
  return length;
}

// glibc's assert calls __assert_fail(expression, file, line, function); in a kernel it fails the launch.
[[noreturn]] inline void kernel_assert_fail(const char* expression, const char* file, unsigned int line,
                                            const char* /*function*/) {
  std::string what = std::string("assertion '") + expression + "' failed";
  ::metrale::host::kernel_trap(what.c_str(), ::metrale::host::CallSite::current(file, line, 0));
  std::abort();  // not reached: kernel_trap throws
}

}  // namespace metrale::host::detail

// The math library's special functions, counted in profiled units only. They stay the C
// library's functions; the macros reach only code after this header (the kernel templates).
#if defined(METRALE_HOST_PROFILED)
namespace metrale::host::profile::detail {
template <float (*Function)(float)>
inline float counted(float a) {
  ::metrale::host::profile::count(::metrale::host::profile::Op::kSpecial);
  return Function(a);
}
inline float counted_powf(float a, float b) {
  ::metrale::host::profile::count(::metrale::host::profile::Op::kSpecial);
  return std::pow(a, b);
}
}  // namespace metrale::host::profile::detail
#define METRALE_HOST_COUNTED(function) ::metrale::host::profile::detail::counted<&::function>
#define expf(a) METRALE_HOST_COUNTED(expf)(a)
#define exp2f(a) METRALE_HOST_COUNTED(exp2f)(a)
#define logf(a) METRALE_HOST_COUNTED(logf)(a)
#define log1pf(a) METRALE_HOST_COUNTED(log1pf)(a)
#define log2f(a) METRALE_HOST_COUNTED(log2f)(a)
#define sinf(a) METRALE_HOST_COUNTED(sinf)(a)
#define cosf(a) METRALE_HOST_COUNTED(cosf)(a)
#define tanhf(a) METRALE_HOST_COUNTED(tanhf)(a)
#define sqrtf(a) METRALE_HOST_COUNTED(sqrtf)(a)
#define erff(a) METRALE_HOST_COUNTED(erff)(a)
#define powf(a, b) ::metrale::host::profile::detail::counted_powf(a, b)
#endif
// NOLINTEND(bugprone-reserved-identifier)
