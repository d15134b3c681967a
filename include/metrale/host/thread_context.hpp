// metrale/host/thread_context.hpp: what a kernel compiled for the host sees of "its" GPU
// thread: its coordinates and the two kinds of sync point (block barrier, warp collective),
// and the warp collectives over whole 16x16 tiles that stand for PTX wmma (below).
// The prelude (cuda_host_prelude.hpp) maps threadIdx, __syncthreads, __shfl_*_sync, ... here.
// The library functions among these form one list, METRALE_HOST_PRELUDE_API (at the end), which
// a run-time compiled (host-JIT) object receives as a table instead of linking against them.
// Invariants: the coordinates pointer is set by the block scheduler before every switch into a
// fiber and only read on that fiber's OS thread; a sync point never returns until the scheduler
// resolved it, and never throws into kernel code (a misuse is recorded and reported by launch()).
#pragma once

#include <vector_types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace metrale::host {

// GCC 12 has no __builtin_COLUMN; there two sync points on one line share a site.
#if defined(__has_builtin) && __has_builtin(__builtin_COLUMN)
#define METRALE_HOST_CALL_COLUMN __builtin_COLUMN()
#else
#define METRALE_HOST_CALL_COLUMN 0U
#endif

// Where a sync intrinsic was called, for error messages and for telling two barriers apart.
// ::metrale::host::CallSite would do, but clang 14 (the fuzz and clang-tidy builds) does not provide
// it with libstdc++ 12; these builtins exist in both compilers.
class CallSite {
 public:
  static constexpr CallSite current(const char* file = __builtin_FILE(), unsigned line = __builtin_LINE(),
                                    unsigned column = METRALE_HOST_CALL_COLUMN) {
    return CallSite(file, line, column);
  }
  constexpr CallSite() = default;
  [[nodiscard]] constexpr const char* file_name() const { return file_; }
  [[nodiscard]] constexpr unsigned line() const { return line_; }
  [[nodiscard]] constexpr unsigned column() const { return column_; }

 private:
  constexpr CallSite(const char* file, unsigned line, unsigned column) : file_(file), line_(line), column_(column) {}
  const char* file_ = "";
  unsigned line_ = 0;
  unsigned column_ = 0;
};

// The warp collectives, one per CUDA intrinsic family; kTile is a whole-warp matrix-tile
// operation (the wmma emulation, metrale/host/thread_context.hpp). kActiveMask (__activemask,
// cooperative_groups::coalesced_threads) names no lanes to wait for: when no other collective of
// its warp can complete, the lanes waiting at the same kActiveMask site are the converged ones,
// and each receives their mask (the request's mask must be the full warp's). kMatchAny/kMatchAll
// compare the lanes' 64 value bits; kReduceMin and kReduceMax compare as int32 when lane_arg is
// 1, as uint32 otherwise.
enum class WarpOp : std::uint8_t {
  kShflIdx,
  kShflUp,
  kShflDown,
  kShflXor,
  kBallot,
  kAny,
  kAll,
  kSyncWarp,
  kTile,
  kActiveMask,
  kMatchAny,
  kMatchAll,
  kReduceAdd,
  kReduceMin,
  kReduceMax,
  kReduceAnd,
  kReduceOr,
  kReduceXor,
};

// A kTile collective's body: runs once, when all 32 lanes arrived, with each lane's operand
// pointer (WarpSyncRequest::value) in lane order; returns "" or what the warp did wrong.
using TileCollectiveFn = std::string (*)(void* const* lane_operands);

// "__shfl_xor_sync": the CUDA spelling, for error messages.
std::string_view warp_op_name(WarpOp op);

// One lane's arrival at a warp collective.
struct WarpSyncRequest {
  WarpOp op = WarpOp::kSyncWarp;
  std::uint32_t mask = 0;
  std::uint64_t value = 0;    // the lane's operand bits (shuffles), or its predicate (votes)
  std::int32_t lane_arg = 0;  // srcLane, delta or laneMask
  std::int32_t width = 32;
  ::metrale::host::CallSite site;
  TileCollectiveFn tile = nullptr;  // kTile only; part of the collective's identity
};

namespace detail {

struct FiberCoordinates {
  uint3 thread_idx{};
  uint3 block_idx{};
  dim3 block_dim{};
  dim3 grid_dim{};
};

// The running fiber's coordinates; null outside a host kernel launch.
inline thread_local const FiberCoordinates* current_coordinates = nullptr;

[[noreturn]] void outside_kernel(const char* what);

// The running fiber's coordinates, else outside_kernel(what): coordinates() out of line, for a
// unit that cannot see the library's current_coordinates (a host-JIT object: PreludeTable below).
const FiberCoordinates& running_coordinates(const char* what);

#if defined(METRALE_HOST_JIT_UNIT)
// A host-JIT object has its own copy of every inline variable, current_coordinates included,
// which the block scheduler never sets: it asks the library (one indirect call per read).
inline const FiberCoordinates& coordinates(const char* what) { return running_coordinates(what); }
#else
inline const FiberCoordinates& coordinates(const char* what) {
  const FiberCoordinates* coords = current_coordinates;
  if (coords == nullptr) {
    outside_kernel(what);
  }
  return *coords;
}
#endif

}  // namespace detail

// The running block's dynamic shared memory (`extern __shared__` on a GPU): the launch's
// dynamic_shared_bytes, 128-byte aligned, filled with 0xCD at block start (a GPU leaves it
// undefined, so a kernel that reads before writing sees garbage here too). A launch that asked
// for none makes this an error naming the kernel's mistake.
unsigned char* dynamic_shared_memory();

// The same memory for `extern __shared__` declarations (the host JIT rewrites each into a pointer
// refreshed from this, cuda_host_prelude.hpp): never an error, since declaring one is no mistake.
// A launch that asked for no bytes gets the guard bytes past an empty buffer, so a write through
// it is reported when the block ends, as a write past a too small buffer is.
unsigned char* dynamic_shared_base();

// __syncthreads(): waits until every thread of the block reached the barrier at this same site.
void sync_threads(const ::metrale::host::CallSite& site);

// __syncthreads_count(predicate): the same barrier; returns how many threads of the block passed
// a non-zero predicate (__syncthreads_and/_or compare it with the block's size and with 0).
int sync_threads_count(const ::metrale::host::CallSite& site, int predicate);

// A kernel's printf: one line of the launch's log (the library's logger, info level) naming the
// kernel, the block and the thread, `text` without its final newline.
void kernel_print(const char* text);

// __trap(), a failed assert: stops the launch, which fails naming the thread and `what` (never
// returns: it throws through the kernel's frames to the fiber's entry).
void kernel_trap(const char* what, const ::metrale::host::CallSite& site);

// ---- thread-block clusters (LaunchConfig::cluster_blocks; templates/metrale_arith.cuh) ----
// Each block of a cluster runs on its own OS thread, all at once, so a block can wait for the
// others. Without a cluster launch a block is a cluster of one.
// The running block's rank in its cluster (blockIdx.x % cluster_blocks) and the cluster's size.
unsigned int cluster_cta_rank();
unsigned int cluster_cta_count();
// barrier.cluster.arrive.release + wait.acquire: waits until every thread of the block reached
// it (at this same site, as __syncthreads) and every other block of the cluster reached a
// cluster barrier or exited; writes before it are visible to the whole cluster after it.
void cluster_sync(const ::metrale::host::CallSite& site);
// The dynamic shared memory of block `rank` of the running block's cluster (mapa): allocated
// and filled with 0xCD before any block of the cluster starts, and refilled with 0xCD when that
// block's threads have all exited (a read after that is the kernel's race, made visible).
unsigned char* cluster_peer_shared_memory(unsigned int rank);

// A warp collective: waits until every lane the mask names arrived at this same site with the
// same mask and width; returns this lane's result bits.
std::uint64_t warp_sync(const WarpSyncRequest& request);

// ---- tile collectives: the host backend's PTX wmma ----
// m16n16k16, bf16 inputs, fp32 accumulators, as warp collectives over whole 16x16 tiles;
// templates/metrale_arith.cuh calls these where the device runs inline PTX. Invariants:
// - each function is one warp collective: all 32 lanes call it at the same site, and the body
//   runs once for the warp, with every lane's operands (as .sync.aligned requires on the GPU);
// - the tile pointer and ldm must be the same on every lane, the pointer 32-byte aligned and
//   ldm a whole number of 16-byte rows; otherwise the launch fails naming the rule;
// - what one lane's fragment holds is private to this emulation: only these functions read or
//   write fragments, so a kernel that would need the GPU's per-lane layout cannot agree with
//   itself here (the element order is a documented implementation detail of tile_collectives.cpp);
// - a product of two bf16 is exact in fp32; D = C + sum over k in order 0..15 with fmaf, so a
//   host run is deterministic (the GPU's order is unspecified; tests bound the difference).

// A lane's share of a 16x16 bf16 operand tile: 8 elements packed two per word.
using TileBf16Fragment = std::uint32_t[4];
// A lane's share of a 16x16 fp32 accumulator tile: 8 elements.
using TileF32Fragment = float[8];

// wmma.load.a.sync.aligned.row.m16n16k16.bf16: A[r][c] = tile[r * ldm + c].
void tile_load_a_bf16_row(TileBf16Fragment& a, const void* tile, std::uint32_t ldm,
                          ::metrale::host::CallSite site = ::metrale::host::CallSite::current());

// wmma.load.b.sync.aligned.col.m16n16k16.bf16: B[k][n] = tile[n * ldm + k].
void tile_load_b_bf16_col(TileBf16Fragment& b, const void* tile, std::uint32_t ldm,
                          ::metrale::host::CallSite site = ::metrale::host::CallSite::current());

// wmma.mma.sync.aligned.row.col.m16n16k16.f32.bf16.bf16.f32: D = A B + C (d may alias c).
void tile_mma_bf16_f32(TileF32Fragment& d, const TileBf16Fragment& a, const TileBf16Fragment& b,
                       const TileF32Fragment& c, ::metrale::host::CallSite site = ::metrale::host::CallSite::current());

// wmma.store.d.sync.aligned.row.m16n16k16.f32: tile[r * ldm + c] = D[r][c].
void tile_store_f32_row(float* tile, const TileF32Fragment& d, std::uint32_t ldm,
                        ::metrale::host::CallSite site = ::metrale::host::CallSite::current());

// The counting hook: called exactly once per emulated 16x16x16 MMA (2 * 16^3 FLOP), by the
// collective's body. It feeds tile_mma_count(); a FLOP/profile recorder hooks in here.
void record_tile_mma();

// 16x16x16 MMAs emulated by this process so far (all threads).
std::uint64_t tile_mma_count();

}  // namespace metrale::host

// ---- profile counters ----
// The arithmetic a profiled host kernel does, counted where the templates already funnel it:
// the prelude's intrinsics (__fmaf_rn, ...), the special functions and the warp collectives.
// The prelude calls count() only in profiled translation units (METRALE_HOST_PROFILED);
// elsewhere its intrinsics count nothing and cost nothing. Invariant: count() is a no-op on an
// OS thread that is not running a profiled block.
namespace metrale::host::profile {

enum class Op : std::uint8_t {
  kFma,      // __fmaf_rn: 2 FLOPs
  kAdd,      // __fadd_rn
  kMul,      // __fmul_rn
  kDiv,      // __fdiv_rn, __fdividef, __frcp_rn
  kSpecial,  // expf, log1pf, __expf, rsqrtf, ...: the special-function unit's work
  kShuffle,  // one lane's __shfl_*_sync
  kVote,     // one lane's __ballot_sync / __any_sync / __all_sync
  kTileMma,  // one warp's 16x16x16 tensor-core MMA (tile_mma_bf16_f32): 2 * 16^3 FLOPs
};
inline constexpr std::size_t kOpKinds = 8;

void count(Op op) noexcept;

// The asynchronous copies (templates/metrale_arith.cuh's cp.async wrappers), for the cost
// model's pipeline-latency term: the host copies at once, but records what a GPU thread would
// keep in flight. async_copy: `bytes` issued into the thread's open group (only copies that read
// memory: a zero-fill reads none); async_commit: the open group closes; async_wait: the thread
// waits until at most `pending` committed groups remain. Called only from profiled units, and
// no-ops on an OS thread that is not running a profiled block, like count().
void async_copy(std::uint32_t bytes) noexcept;
void async_commit() noexcept;
void async_wait(std::uint32_t pending) noexcept;

// One load (write false) or store of `bytes` at `address` by the running thread: what the access
// callbacks of a profiled unit (src/host/access_trace.cpp) record. A no-op like count().
void access(std::uintptr_t address, std::size_t bytes, bool write) noexcept;

}  // namespace metrale::host::profile

// ---- the prelude's run-time entry points ----
// Everything above that a kernel unit calls but the library defines, as one list. A unit built
// into the library calls these functions directly; a host-JIT object (src/host/host_jit.cpp)
// cannot: it is dlopen'ed by an executable that exports no symbols, or by libmetrale.so, whose
// version script exports only the C ABI. So its loader hands it a PreludeTable of pointers to
// the library's functions, and the object (METRALE_HOST_JIT_UNIT) defines each function as a
// hidden one-line call through that table. Why a table and not exported symbols (an
// --export-dynamic or --dynamic-list for executables plus a version-script entry per function
// for libmetrale.so): it works the same in the static library, libmetrale.so and the Python
// extension, exports nothing from any of them, needs no RTLD_GLOBAL promotion of the library,
// and lets the object link with --no-undefined, so a function missing here fails the JIT's
// compile by name instead of its dlopen. The cost: one indirect call per prelude call and per
// threadIdx read, in JIT'd kernels only.
// Invariants: each entry is X(member, function, return type, (parameters), (arguments),
// qualifiers), `function` named relative to ::metrale::host and never overloaded; the table's
// fingerprint (names, types, sizes) is checked when an object binds it, so an object compiled
// against other headers is refused, not called through a wrong slot.
#define METRALE_HOST_PRELUDE_API(X)                                                                                  \
  X(running_coordinates, detail::running_coordinates, const detail::FiberCoordinates&, (const char* what), (what), ) \
  X(dynamic_shared_memory, dynamic_shared_memory, unsigned char*, (), (), )                                          \
  X(dynamic_shared_base, dynamic_shared_base, unsigned char*, (), (), )                                              \
  X(sync_threads, sync_threads, void, (const CallSite& site), (site), )                                              \
  X(sync_threads_count, sync_threads_count, int, (const CallSite& site, int predicate), (site, predicate), )         \
  X(kernel_print, kernel_print, void, (const char* text), (text), )                                                  \
  X(kernel_trap, kernel_trap, void, (const char* what, const CallSite& site), (what, site), )                        \
  X(cluster_cta_rank, cluster_cta_rank, unsigned int, (), (), )                                                      \
  X(cluster_cta_count, cluster_cta_count, unsigned int, (), (), )                                                    \
  X(cluster_sync, cluster_sync, void, (const CallSite& site), (site), )                                              \
  X(cluster_peer_shared_memory, cluster_peer_shared_memory, unsigned char*, (unsigned int rank), (rank), )           \
  X(warp_sync, warp_sync, std::uint64_t, (const WarpSyncRequest& request), (request), )                              \
  X(tile_load_a_bf16_row, tile_load_a_bf16_row, void,                                                                \
    (TileBf16Fragment & a, const void* tile, std::uint32_t ldm, CallSite site), (a, tile, ldm, site), )              \
  X(tile_load_b_bf16_col, tile_load_b_bf16_col, void,                                                                \
    (TileBf16Fragment & b, const void* tile, std::uint32_t ldm, CallSite site), (b, tile, ldm, site), )              \
  X(tile_mma_bf16_f32, tile_mma_bf16_f32, void,                                                                      \
    (TileF32Fragment & d, const TileBf16Fragment& a, const TileBf16Fragment& b, const TileF32Fragment& c,            \
     CallSite site),                                                                                                 \
    (d, a, b, c, site), )                                                                                            \
  X(tile_store_f32_row, tile_store_f32_row, void,                                                                    \
    (float* tile, const TileF32Fragment& d, std::uint32_t ldm, CallSite site), (tile, d, ldm, site), )               \
  X(profile_count, profile::count, void, (profile::Op op), (op), noexcept)                                           \
  X(profile_async_copy, profile::async_copy, void, (std::uint32_t bytes), (bytes), noexcept)                         \
  X(profile_async_commit, profile::async_commit, void, (), (), noexcept)                                             \
  X(profile_async_wait, profile::async_wait, void, (std::uint32_t pending), (pending), noexcept)                     \
  X(profile_access, profile::access, void, (std::uintptr_t address, std::size_t bytes, bool write),                  \
    (address, bytes, write), noexcept)

namespace metrale::host {

struct PreludeTable {
  std::uint64_t fingerprint = 0;  // prelude_table_fingerprint() of the side that filled it
#define METRALE_HOST_PRELUDE_MEMBER(member, function, result, params, args, qualifiers) \
  result(*member) params qualifiers = nullptr;  // NOLINT(bugprone-macro-parentheses): a declarator, not an expression
  METRALE_HOST_PRELUDE_API(METRALE_HOST_PRELUDE_MEMBER)
#undef METRALE_HOST_PRELUDE_MEMBER
};

// FNV-1a over the list as written (each entry's name, type and parameters, stringized, which
// the preprocessor does the same way in every compiler) and the sizes of the structs that cross:
// a compile-time constant, equal on both sides when their headers agree.
constexpr std::uint64_t prelude_table_fingerprint() {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  const auto mix = [&hash](std::string_view text) {
    for (const char c : text) {
      hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
    }
    hash = (hash ^ 0xffU) * 0x100000001b3ULL;  // a separator: ("ab", "c") differs from ("a", "bc")
  };
  for (const std::size_t size : {sizeof(PreludeTable), sizeof(CallSite), sizeof(WarpSyncRequest),
                                 sizeof(detail::FiberCoordinates), sizeof(TileBf16Fragment), sizeof(TileF32Fragment)}) {
    hash = (hash ^ size) * 0x100000001b3ULL;
  }
#define METRALE_HOST_PRELUDE_MIX(member, function, result, params, args, qualifiers) \
  mix(#member " " #function " " #result " " #params " " #qualifiers);
  METRALE_HOST_PRELUDE_API(METRALE_HOST_PRELUDE_MIX)
#undef METRALE_HOST_PRELUDE_MIX
  return hash;
}

}  // namespace metrale::host

#if defined(METRALE_HOST_JIT_UNIT)
// The object's side: the loader's table and the functions the prelude calls, each through it.
// Hidden whatever the flags, so nothing of the object binds to a symbol some executable exports;
// never instrumented, so a profiled object's access callbacks cannot recurse into themselves.
#define METRALE_HOST_JIT_LOCAL __attribute__((visibility("hidden"), no_sanitize_address))
namespace metrale::host {
namespace detail {
// Read and written atomically: a second loader binds the same object (one mapping per path) while
// its kernels run. Through the compiler's __atomic builtins, not std::atomic: a profiled object
// instruments every function it compiles, std::atomic's load included, so the access callbacks
// below would call themselves through it without end.
__attribute__((visibility("hidden"))) inline const PreludeTable* jit_prelude = nullptr;
METRALE_HOST_JIT_LOCAL inline const PreludeTable* jit_table() {
  return __atomic_load_n(&jit_prelude, __ATOMIC_ACQUIRE);
}
}  // namespace detail

// Keeps `table` for the object's calls; false (nothing kept) when its fingerprint is not this
// unit's: the object was compiled against other prelude headers than the loading library's.
METRALE_HOST_JIT_LOCAL inline bool bind_prelude(const PreludeTable* table) {
  if (table == nullptr || table->fingerprint != prelude_table_fingerprint()) {  // a constant here
    return false;
  }
  __atomic_store_n(&detail::jit_prelude, table, __ATOMIC_RELEASE);
  return true;
}

#define METRALE_HOST_PRELUDE_FORWARD(member, function, result, params, args, qualifiers) \
  METRALE_HOST_JIT_LOCAL result function params qualifiers { return detail::jit_table()->member args; }
METRALE_HOST_PRELUDE_API(METRALE_HOST_PRELUDE_FORWARD)
#undef METRALE_HOST_PRELUDE_FORWARD
}  // namespace metrale::host

#if defined(METRALE_HOST_PROFILED)
// A profiled object's loads and stores call these (cmake/profiled_host.cmake's flags); the
// library's own definitions (src/host/access_trace.cpp) are not exported, so they are the
// object's, each one a profile::access call; one made before the entry bound the table (static
// initialisers at dlopen) records nothing.
// Reserved names by necessity.
namespace metrale::host::detail {
METRALE_HOST_JIT_LOCAL inline void jit_access(std::uintptr_t address, std::size_t bytes, bool write) {
  if (const PreludeTable* table = jit_table()) {
    table->profile_access(address, bytes, write);
  }
}
}  // namespace metrale::host::detail
// NOLINTBEGIN(bugprone-reserved-identifier,readability-identifier-naming)
extern "C" {
#define METRALE_HOST_JIT_ACCESS(n)                                                \
  METRALE_HOST_JIT_LOCAL void __asan_load##n##_noabort(std::uintptr_t address) {  \
    ::metrale::host::detail::jit_access(address, n, false);                       \
  }                                                                               \
  METRALE_HOST_JIT_LOCAL void __asan_store##n##_noabort(std::uintptr_t address) { \
    ::metrale::host::detail::jit_access(address, n, true);                        \
  }
METRALE_HOST_JIT_ACCESS(1)
METRALE_HOST_JIT_ACCESS(2)
METRALE_HOST_JIT_ACCESS(4)
METRALE_HOST_JIT_ACCESS(8)
METRALE_HOST_JIT_ACCESS(16)
#undef METRALE_HOST_JIT_ACCESS
METRALE_HOST_JIT_LOCAL void __asan_loadN_noabort(std::uintptr_t address, std::size_t bytes) {
  ::metrale::host::detail::jit_access(address, bytes, false);
}
METRALE_HOST_JIT_LOCAL void __asan_storeN_noabort(std::uintptr_t address, std::size_t bytes) {
  ::metrale::host::detail::jit_access(address, bytes, true);
}
METRALE_HOST_JIT_LOCAL void __asan_handle_no_return() {}
}
// NOLINTEND(bugprone-reserved-identifier,readability-identifier-naming)
#endif
#undef METRALE_HOST_JIT_LOCAL
#endif
