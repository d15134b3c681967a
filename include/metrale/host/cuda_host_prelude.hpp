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
// - __shared__ is `static thread_local`: one OS thread runs one block at a time, all of that
//   block's fibers on it, so thread-local storage is per-block storage, like shared memory.
//   Dynamic shared memory is reached through metrale::host::dynamic_shared_memory() (the
//   templates' dynamic_shared_memory() in metrale_arith.cuh), not `extern __shared__`.
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
#pragma once
// The prelude exists to define CUDA's own reserved names (__global__, __shfl_xor_sync, ...).
// NOLINTBEGIN(bugprone-reserved-identifier)

#include <math.h>
#include <vector_functions.h>
#include <vector_types.h>

#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "metrale/host/thread_context.hpp"

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
#define __shared__ static thread_local
#define __launch_bounds__(...)
// __restrict__ is a GCC/Clang keyword already.

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
inline void __syncwarp(unsigned mask = 0xffffffffU,
                       ::metrale::host::CallSite site = ::metrale::host::CallSite::current()) {
  ::metrale::host::warp_sync({::metrale::host::WarpOp::kSyncWarp, mask, 0, 0, warpSize, site});
}
// Memory fences order nothing more on one CPU thread; the atomics below are seq_cst.
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_signal_fence(std::memory_order_seq_cst); }

}  // namespace METRALE_HOST_PRELUDE_NAMESPACE

// --- warp shuffles and votes --------------------------------------------------------------
namespace metrale::host::detail {

template <typename T>
T warp_shuffle(WarpOp op, unsigned mask, T var, int lane_arg, int width, const ::metrale::host::CallSite& site) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= sizeof(std::uint64_t),
                "a warp shuffle moves at most 64 bits of a trivially copyable value");
  std::uint64_t bits = 0;
  std::memcpy(&bits, &var, sizeof(T));
  bits = warp_sync({op, mask, bits, lane_arg, width, site});
  T out = var;
  std::memcpy(&out, &bits, sizeof(T));
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
inline float __expf(float a) {
  METRALE_HOST_COUNT(kSpecial);
  return std::exp(a);
}
inline float __logf(float a) {
  METRALE_HOST_COUNT(kSpecial);
  return std::log(a);
}
inline float __powf(float a, float b) {
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

inline int __popc(unsigned x) { return std::popcount(x); }
inline int __clz(unsigned x) { return std::countl_zero(x); }
inline int __ffs(unsigned x) { return x == 0 ? 0 : std::countr_zero(x) + 1; }

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
template <typename T>
T __ldg(const T* address) {
  return *address;
}

// Blocks run on several OS threads at once, so global atomics are real atomics.
template <typename T>
T atomicAdd(T* address, T value) {
  return std::atomic_ref<T>(*address).fetch_add(value);
}
template <typename T>
T atomicMax(T* address, T value) {
  std::atomic_ref<T> ref(*address);
  T seen = ref.load();
  while (seen < value && !ref.compare_exchange_weak(seen, value)) {
  }
  return seen;
}
template <typename T>
T atomicMin(T* address, T value) {
  std::atomic_ref<T> ref(*address);
  T seen = ref.load();
  while (value < seen && !ref.compare_exchange_weak(seen, value)) {
  }
  return seen;
}
template <typename T>
T atomicExch(T* address, T value) {
  return std::atomic_ref<T>(*address).exchange(value);
}
template <typename T>
T atomicCAS(T* address, T compare, T value) {
  std::atomic_ref<T>(*address).compare_exchange_strong(compare, value);
  return compare;
}

}  // namespace METRALE_HOST_PRELUDE_NAMESPACE

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
