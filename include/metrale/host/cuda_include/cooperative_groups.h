// metrale/host/cuda_include/cooperative_groups.h: what `#include <cooperative_groups.h>` finds when
// the host JIT compiles a kernel (src/host/host_jit.cpp puts this folder ahead of the toolkit's):
// CUDA's cooperative groups for the host backend, built on the prelude's barriers and warp
// collectives (cuda_host_prelude.hpp), so a kernel written for nvcc runs unchanged.
// It gives: this_thread_block() (and with a block_tile_memory), tiled_partition<N>(block or tile)
// and thread_block_tile<N> (N a power of two up to 32; 64 to 1024: a multi-warp tile, whose
// collectives are block-wide barriers here), the dynamic tiled_partition(group, n) as a thread_group,
// coalesced_threads(), binary_partition(), labeled_partition(), this_thread(), this_grid(), sync(group),
// thread_rank(group) and group_size(group); cg::reduce and its operators are in
// cooperative_groups/reduce.h, as in CUDA.
// Invariants:
// - a tile is an N-aligned lane segment of its warp (32 consecutive linear thread indices), as on
//   the GPU; its collectives are the prelude's with the tile's lane mask and width N, so a thread
//   missing from its tile's collective is reported by the launch, never silently matched;
// - a coalesced group's lanes are those of its warp that reached coalesced_threads() together
//   (WarpOp::kActiveMask: the scheduler groups them when the warp can do nothing else);
// - every member that synchronises takes its caller's CallSite (a defaulted last parameter), so
//   two call sites in a kernel are two sync points, as with the prelude's intrinsics;
// - the host backend has no cooperative launch: this_grid().is_valid() is false and
//   this_grid().sync() throws a refusal naming the construct and its call site, which the launch
//   reports (a GPU would hang or fault); every other grid_group member works;
// - no standard header beyond the prelude's own: a profiled host-JIT unit includes the kernel's
//   source, and so this file, inside a namespace (host/host_jit.hpp).
#pragma once
// CUDA's own names (__syncwarp, ...) are called here as the kernels call them.
// NOLINTBEGIN(bugprone-reserved-identifier)

#include "metrale/host/cuda_host_prelude.hpp"

namespace metrale_host_cg {

using Site = ::metrale::host::CallSite;

// Only the library's own factories make groups (as CUDA's constructors are private).
struct Make {};

inline const ::metrale::host::detail::FiberCoordinates& coords() {
  return ::metrale::host::detail::coordinates("cooperative_groups");
}
// The calling thread's linear index in its block: x fastest, as warps are formed.
inline unsigned block_rank() {
  const auto& c = coords();
  return (c.thread_idx.z * c.block_dim.y + c.thread_idx.y) * c.block_dim.x + c.thread_idx.x;
}
inline unsigned block_threads() {
  const auto& c = coords();
  return c.block_dim.x * c.block_dim.y * c.block_dim.z;
}
inline unsigned lane() { return block_rank() % 32U; }
inline unsigned lanes_below() { return (1U << lane()) - 1U; }
// The calling lane's rank among the lanes `mask` names.
inline unsigned rank_in(unsigned mask) { return static_cast<unsigned>(std::popcount(mask & lanes_below())); }
// The lane holding rank `rank` among the lanes `mask` names (rank < popcount(mask)).
inline unsigned lane_of_rank(unsigned mask, unsigned rank) {
  for (unsigned l = 0; l < 32U; ++l) {
    if ((mask >> l & 1U) != 0 && rank-- == 0) {
      return l;
    }
  }
  return lane();
}
// `lanes` (a warp-wide bit set) with only the bits `mask` names, packed in rank order.
inline unsigned pack(unsigned mask, unsigned lanes) {
  unsigned packed = 0;
  unsigned rank = 0;
  for (unsigned l = 0; l < 32U; ++l) {
    if ((mask >> l & 1U) != 0) {
      packed |= (lanes >> l & 1U) << rank++;
    }
  }
  return packed;
}
// The lanes of the calling thread's warp that reached this call site together (__activemask).
inline unsigned active_mask(const Site& site) {
  return static_cast<unsigned>(
      ::metrale::host::warp_sync({::metrale::host::WarpOp::kActiveMask, 0xffffffffU, 0, 0, 32, site}));
}

// What the host backend refuses, thrown into the kernel's fiber: the launch reports it.
class Refusal : public std::exception {
 public:
  explicit Refusal(std::string what) : what_(std::move(what)) {}
  [[nodiscard]] const char* what() const noexcept override { return what_.c_str(); }

 private:
  std::string what_;
};
inline std::string describe(const Site& site) {
  std::string_view file = site.file_name();
  if (const auto slash = file.rfind('/'); slash != std::string_view::npos) {
    file.remove_prefix(slash + 1);
  }
  return std::string(file) + ":" + std::to_string(site.line());
}

// A block-wide exchange for the multi-warp tiles: every thread of the block puts `value` in its
// slot between two barriers at `site`; the slots stay readable until the next exchange's first
// barrier. Per-block storage: one OS thread runs one block at a time (thread_local, as the
// prelude's __shared__).
template <typename T>
const unsigned char* exchange(const T& value, const Site& site) {
  alignas(16) alignas(T) static thread_local unsigned char slots[1024 * sizeof(T)];
  __syncthreads(site);  // the previous exchange's readers are done
  std::memcpy(static_cast<void*>(slots + block_rank() * sizeof(T)), static_cast<const void*>(&value), sizeof(T));
  __syncthreads(site);
  return slots;
}
// The value in the slot of block rank `rank` (`like` gives the type and a value to copy over).
template <typename T>
T slot(const unsigned char* slots, unsigned rank, T like) {
  std::memcpy(static_cast<void*>(&like), static_cast<const void*>(slots + rank * sizeof(T)), sizeof(T));
  return like;
}
}  // namespace metrale_host_cg

namespace cooperative_groups {

// Named without a leading ::, so a profiled unit's enclosing namespace (see above) finds its own.
namespace host_detail = metrale_host_cg;

class thread_block {
 public:
  explicit thread_block(host_detail::Make /*unused*/) {}
  void sync(host_detail::Site site = host_detail::Site::current()) const { __syncthreads(site); }
  [[nodiscard]] unsigned thread_rank() const { return host_detail::block_rank(); }
  [[nodiscard]] unsigned size() const { return host_detail::block_threads(); }
  [[nodiscard]] unsigned num_threads() const { return size(); }
  [[nodiscard]] dim3 group_index() const { return dim3(host_detail::coords().block_idx); }
  [[nodiscard]] dim3 thread_index() const { return dim3(host_detail::coords().thread_idx); }
  [[nodiscard]] dim3 dim_threads() const { return host_detail::coords().block_dim; }
  [[nodiscard]] dim3 group_dim() const { return dim_threads(); }
};

inline thread_block this_thread_block() { return thread_block(host_detail::Make{}); }

// ParentT only records what the tile was partitioned from; every tile of one Size converts to
// thread_block_tile<Size> (the form kernels usually name).
template <unsigned int Size, typename ParentT = void>
class thread_block_tile {
  static_assert(Size >= 1 && Size <= 32 && (Size & (Size - 1)) == 0,
                "thread_block_tile<Size>: Size must be a power of two up to 1024 (1 to 32 in one warp, 64 to 1024 "
                "a multi-warp tile)");

 public:
  static constexpr unsigned int numThreads = Size;

  thread_block_tile(host_detail::Make /*unused*/, unsigned meta_rank, unsigned meta_size)
      : meta_rank_(meta_rank), meta_size_(meta_size) {}
  template <typename OtherParent>
  // NOLINTNEXTLINE(google-explicit-constructor): CUDA converts tiles of one size implicitly.
  thread_block_tile(const thread_block_tile<Size, OtherParent>& other)
      : meta_rank_(other.meta_group_rank()), meta_size_(other.meta_group_size()) {}

  // The lanes of the calling thread's tile.
  [[nodiscard]] static unsigned mask() {
    if constexpr (Size == 32) {
      return 0xffffffffU;
    } else {
      return ((1U << Size) - 1U) << (host_detail::lane() & ~(Size - 1U));
    }
  }
  [[nodiscard]] static unsigned thread_rank() { return host_detail::block_rank() & (Size - 1U); }
  [[nodiscard]] static constexpr unsigned size() { return Size; }
  [[nodiscard]] static constexpr unsigned num_threads() { return Size; }
  [[nodiscard]] unsigned meta_group_rank() const { return meta_rank_; }
  [[nodiscard]] unsigned meta_group_size() const { return meta_size_; }

  void sync(host_detail::Site site = host_detail::Site::current()) const { __syncwarp(mask(), site); }
  template <typename T>
  T shfl(T var, int src_rank, host_detail::Site site = host_detail::Site::current()) const {
    return __shfl_sync(mask(), var, src_rank, static_cast<int>(Size), site);
  }
  template <typename T>
  T shfl_down(T var, unsigned delta, host_detail::Site site = host_detail::Site::current()) const {
    return __shfl_down_sync(mask(), var, delta, static_cast<int>(Size), site);
  }
  template <typename T>
  T shfl_up(T var, unsigned delta, host_detail::Site site = host_detail::Site::current()) const {
    return __shfl_up_sync(mask(), var, delta, static_cast<int>(Size), site);
  }
  template <typename T>
  T shfl_xor(T var, unsigned lane_mask, host_detail::Site site = host_detail::Site::current()) const {
    return __shfl_xor_sync(mask(), var, static_cast<int>(lane_mask), static_cast<int>(Size), site);
  }
  // Bit r of ballot() is the predicate of the tile's rank r, as in CUDA.
  unsigned ballot(int predicate, host_detail::Site site = host_detail::Site::current()) const {
    return __ballot_sync(mask(), predicate, site) >> (host_detail::lane() & ~(Size - 1U));
  }
  int any(int predicate, host_detail::Site site = host_detail::Site::current()) const {
    return ballot(predicate, site) != 0 ? 1 : 0;
  }
  int all(int predicate, host_detail::Site site = host_detail::Site::current()) const {
    return ballot(predicate, site) == (mask() >> (host_detail::lane() & ~(Size - 1U))) ? 1 : 0;
  }

 private:
  unsigned meta_rank_;
  unsigned meta_size_;
};

// A multi-warp tile (64 to 1024 threads: CUDA's rule): Size consecutive ranks of the block. Its
// collectives (sync, shfl, any, all, cg::reduce, the scans) exchange through per-block storage
// between two barriers of the whole block (host_detail::exchange), so every thread of the block
// calls a tile collective at the same site, as code written for multi-warp tiles does; a tile
// that skips one the others call is the launch's barrier error naming both sites, never a silent
// wrong result. The block's size must be a multiple of Size (tiled_partition refuses other sizes).
template <unsigned int Size, typename ParentT>
requires(Size > 32) class thread_block_tile<Size, ParentT> {
  static_assert(Size <= 1024 && (Size & (Size - 1)) == 0,
                "thread_block_tile<Size>: Size must be a power of two up to 1024 (1 to 32 in one warp, 64 to 1024 "
                "a multi-warp tile)");

 public:
  static constexpr unsigned int numThreads = Size;

  thread_block_tile(host_detail::Make /*unused*/, unsigned meta_rank, unsigned meta_size)
      : meta_rank_(meta_rank), meta_size_(meta_size) {}
  template <typename OtherParent>
  // NOLINTNEXTLINE(google-explicit-constructor): CUDA converts tiles of one size implicitly.
  thread_block_tile(const thread_block_tile<Size, OtherParent>& other)
      : meta_rank_(other.meta_group_rank()), meta_size_(other.meta_group_size()) {}

  [[nodiscard]] static unsigned thread_rank() { return host_detail::block_rank() & (Size - 1U); }
  [[nodiscard]] static constexpr unsigned size() { return Size; }
  [[nodiscard]] static constexpr unsigned num_threads() { return Size; }
  [[nodiscard]] unsigned meta_group_rank() const { return meta_rank_; }
  [[nodiscard]] unsigned meta_group_size() const { return meta_size_; }
  // The tile's first rank in the block.
  [[nodiscard]] static unsigned first_rank() { return host_detail::block_rank() & ~(Size - 1U); }

  void sync(host_detail::Site site = host_detail::Site::current()) const { __syncthreads(site); }
  // The value of the tile's rank src_rank (modulo Size).
  template <typename T>
  T shfl(T var, unsigned src_rank, host_detail::Site site = host_detail::Site::current()) const {
    const unsigned char* slots = host_detail::exchange(var, site);
    return host_detail::slot(slots, first_rank() + src_rank % Size, var);
  }
  int any(int predicate, host_detail::Site site = host_detail::Site::current()) const {
    const unsigned char* slots = host_detail::exchange(predicate != 0 ? 1 : 0, site);
    int result = 0;
    for (unsigned r = 0; r < Size; ++r) {
      result |= host_detail::slot(slots, first_rank() + r, 0);
    }
    return result;
  }
  int all(int predicate, host_detail::Site site = host_detail::Site::current()) const {
    const unsigned char* slots = host_detail::exchange(predicate != 0 ? 1 : 0, site);
    int result = 1;
    for (unsigned r = 0; r < Size; ++r) {
      result &= host_detail::slot(slots, first_rank() + r, 0);
    }
    return result;
  }

 private:
  unsigned meta_rank_;
  unsigned meta_size_;
};

// The storage a GPU's multi-warp tiles talk through (sm_80+ reserve it themselves). The host's
// tiles exchange through per-block storage of their own, so this only has to exist; the block
// given it must not be larger than MaxBlockSize (this_thread_block(scratch) refuses by name).
template <unsigned int MaxBlockSize = 1024>
struct block_tile_memory {
  static_assert(MaxBlockSize >= 1 && MaxBlockSize <= 1024, "block_tile_memory<MaxBlockSize>: at most 1024 threads");
  unsigned char unused;
};

template <unsigned int MaxBlockSize>
thread_block this_thread_block(block_tile_memory<MaxBlockSize>& /*scratch*/) {
  if (host_detail::block_threads() > MaxBlockSize) {
    throw host_detail::Refusal("cooperative_groups::this_thread_block(block_tile_memory<" +
                               std::to_string(MaxBlockSize) + ">&): the block has " +
                               std::to_string(host_detail::block_threads()) + " threads, more than the scratch is for");
  }
  return thread_block(host_detail::Make{});
}

template <unsigned int Size>
thread_block_tile<Size, thread_block> tiled_partition(const thread_block& parent) {
  if constexpr (Size > 32) {
    if (parent.size() % Size != 0) {
      throw host_detail::Refusal("cooperative_groups::tiled_partition<" + std::to_string(Size) +
                                 ">(block): a multi-warp tile needs a block whose size is a multiple of " +
                                 std::to_string(Size) + " (this block has " + std::to_string(parent.size()) +
                                 " threads)");
    }
  }
  return {host_detail::Make{}, parent.thread_rank() / Size, (parent.size() + Size - 1) / Size};
}
template <unsigned int Size, unsigned int ParentSize, typename GrandParent>
thread_block_tile<Size, thread_block_tile<ParentSize, GrandParent>> tiled_partition(
    const thread_block_tile<ParentSize, GrandParent>& parent) {
  static_assert(Size <= ParentSize, "tiled_partition<Size>(tile): Size must not exceed the tile's size");
  return {host_detail::Make{}, parent.thread_rank() / Size, ParentSize / Size};
}

inline thread_block_tile<1, void> this_thread() {
  return {host_detail::Make{}, host_detail::block_rank(), host_detail::block_threads()};
}

// Lanes of one warp, any subset: what coalesced_threads() and binary_partition() make.
class coalesced_group {
 public:
  coalesced_group(host_detail::Make /*unused*/, unsigned mask) : mask_(mask) {}

  [[nodiscard]] unsigned mask() const { return mask_; }
  [[nodiscard]] unsigned size() const { return static_cast<unsigned>(std::popcount(mask_)); }
  [[nodiscard]] unsigned num_threads() const { return size(); }
  [[nodiscard]] unsigned thread_rank() const { return host_detail::rank_in(mask_); }
  [[nodiscard]] unsigned meta_group_rank() const { return 0; }
  [[nodiscard]] unsigned meta_group_size() const { return 1; }

  void sync(host_detail::Site site = host_detail::Site::current()) const { __syncwarp(mask_, site); }
  // A rank past the group's size wraps, as a lane past a width does.
  template <typename T>
  T shfl(T var, int src_rank, host_detail::Site site = host_detail::Site::current()) const {
    const unsigned rank = static_cast<unsigned>(src_rank) % size();
    return __shfl_sync(mask_, var, static_cast<int>(host_detail::lane_of_rank(mask_, rank)), 32, site);
  }
  // A source rank outside the group leaves the lane its own value, as a tile's shuffles do.
  template <typename T>
  T shfl_down(T var, unsigned delta, host_detail::Site site = host_detail::Site::current()) const {
    const unsigned rank = thread_rank() + delta;
    const unsigned source = rank < size() ? host_detail::lane_of_rank(mask_, rank) : host_detail::lane();
    return __shfl_sync(mask_, var, static_cast<int>(source), 32, site);
  }
  template <typename T>
  T shfl_up(T var, unsigned delta, host_detail::Site site = host_detail::Site::current()) const {
    const unsigned rank = thread_rank();
    const unsigned source = rank >= delta ? host_detail::lane_of_rank(mask_, rank - delta) : host_detail::lane();
    return __shfl_sync(mask_, var, static_cast<int>(source), 32, site);
  }
  // Bit r of ballot() is the predicate of the group's rank r, as in CUDA.
  unsigned ballot(int predicate, host_detail::Site site = host_detail::Site::current()) const {
    return host_detail::pack(mask_, __ballot_sync(mask_, predicate, site));
  }
  int any(int predicate, host_detail::Site site = host_detail::Site::current()) const {
    return __ballot_sync(mask_, predicate, site) != 0 ? 1 : 0;
  }
  int all(int predicate, host_detail::Site site = host_detail::Site::current()) const {
    return __ballot_sync(mask_, predicate, site) == mask_ ? 1 : 0;
  }

 private:
  unsigned mask_;
};

inline coalesced_group coalesced_threads(host_detail::Site site = host_detail::Site::current()) {
  return {host_detail::Make{}, host_detail::active_mask(site)};
}

// The lanes of `parent` whose predicate equals the caller's.
inline coalesced_group binary_partition(const coalesced_group& parent, bool predicate,
                                        host_detail::Site site = host_detail::Site::current()) {
  const unsigned ones = __ballot_sync(parent.mask(), predicate ? 1 : 0, site);
  return {host_detail::Make{}, predicate ? ones : parent.mask() & ~ones};
}
template <unsigned int Size, typename ParentT>
coalesced_group binary_partition(const thread_block_tile<Size, ParentT>& parent, bool predicate,
                                 host_detail::Site site = host_detail::Site::current()) {
  return binary_partition(coalesced_group(host_detail::Make{}, parent.mask()), predicate, site);
}

// The lanes of `parent` whose label equals the caller's (an integral or pointer label, as in
// CUDA; a bool label is binary_partition's): __match_any_sync over the parent's lanes.
template <typename Label>
coalesced_group labeled_partition(const coalesced_group& parent, Label label,
                                  host_detail::Site site = host_detail::Site::current()) {
  static_assert(std::is_integral_v<Label> || std::is_pointer_v<Label>,
                "labeled_partition predicate must be an integral or pointer type");
  if constexpr (std::is_same_v<Label, bool>) {
    return binary_partition(parent, label, site);
  } else {
    unsigned long long key = 0;
    if constexpr (std::is_pointer_v<Label>) {
      key = reinterpret_cast<unsigned long long>(label);
    } else {
      key = static_cast<unsigned long long>(label);
    }
    return {host_detail::Make{}, __match_any_sync(parent.mask(), key, site) & parent.mask()};
  }
}
template <unsigned int Size, typename ParentT, typename Label>
coalesced_group labeled_partition(const thread_block_tile<Size, ParentT>& parent, Label label,
                                  host_detail::Site site = host_detail::Site::current()) {
  return labeled_partition(coalesced_group(host_detail::Make{}, parent.mask()), label, site);
}

// A group whose kind is known at run time: the block, or lanes of one warp.
class thread_group {
 public:
  // NOLINTBEGIN(google-explicit-constructor): CUDA's groups convert to thread_group implicitly.
  thread_group(const thread_block& /*block*/) {}
  template <unsigned int Size, typename ParentT>
  thread_group(const thread_block_tile<Size, ParentT>& tile) : lanes_(tile.mask()), whole_block_(false) {}
  thread_group(const coalesced_group& group) : lanes_(group.mask()), whole_block_(false) {}
  // NOLINTEND(google-explicit-constructor)

  void sync(host_detail::Site site = host_detail::Site::current()) const {
    if (whole_block_) {
      __syncthreads(site);
    } else {
      __syncwarp(lanes_, site);
    }
  }
  [[nodiscard]] unsigned thread_rank() const {
    return whole_block_ ? host_detail::block_rank() : host_detail::rank_in(lanes_);
  }
  [[nodiscard]] unsigned size() const {
    return whole_block_ ? host_detail::block_threads() : static_cast<unsigned>(std::popcount(lanes_));
  }
  [[nodiscard]] unsigned num_threads() const { return size(); }
  // The lanes of the calling thread's warp in the group (those that exist, for a block).
  [[nodiscard]] unsigned lanes() const {
    if (!whole_block_) {
      return lanes_;
    }
    const unsigned left = host_detail::block_threads() - (host_detail::block_rank() & ~31U);
    return left >= 32U ? 0xffffffffU : (1U << left) - 1U;
  }
  // The calling thread's rank among lanes().
  [[nodiscard]] unsigned rank_in_warp() const { return host_detail::rank_in(lanes()); }

 private:
  unsigned lanes_ = 0xffffffffU;
  bool whole_block_ = true;
};

// Tiles of `tile_size` consecutive ranks of `parent`; tile_size a power of two up to 32 (a block's
// tiles are then its warps' aligned lane segments, a tile's or coalesced group's by rank).
inline thread_group tiled_partition(const thread_group& parent, unsigned tile_size) {
  if (tile_size == 0 || tile_size > 32 || (tile_size & (tile_size - 1)) != 0) {
    throw host_detail::Refusal("cooperative_groups::tiled_partition(group, " + std::to_string(tile_size) +
                               "): on the host backend the tile size must be a power of two up to 32");
  }
  const unsigned parent_lanes = parent.lanes();
  const auto ranks = static_cast<unsigned>(std::popcount(parent_lanes));
  const unsigned first = parent.rank_in_warp() & ~(tile_size - 1);
  unsigned lanes = 0;
  for (unsigned rank = first; rank < first + tile_size && rank < ranks; ++rank) {
    lanes |= 1U << host_detail::lane_of_rank(parent_lanes, rank);
  }
  return coalesced_group(host_detail::Make{}, lanes);
}

// The grid of a launch. Without a cooperative launch (the host backend has none) it is not valid:
// sync() refuses by name instead of waiting for blocks that may never run alongside this one.
class grid_group {
 public:
  explicit grid_group(host_detail::Make /*unused*/) {}
  [[nodiscard]] bool is_valid() const { return false; }
  void sync(host_detail::Site site = host_detail::Site::current()) const {
    throw host_detail::Refusal(
        "cooperative_groups::grid_group::sync() (this_grid().sync()) at " + host_detail::describe(site) +
        " needs a cooperative launch (cudaLaunchCooperativeKernel): the host backend has no cooperative launch, so "
        "its blocks are not all resident at once and a grid-wide barrier cannot be kept (this_grid().is_valid() "
        "is false)");
  }
  [[nodiscard]] unsigned long long block_rank() const {
    const auto& c = host_detail::coords();
    return (static_cast<unsigned long long>(c.block_idx.z) * c.grid_dim.y + c.block_idx.y) * c.grid_dim.x +
           c.block_idx.x;
  }
  [[nodiscard]] unsigned long long num_blocks() const {
    const auto& c = host_detail::coords();
    return static_cast<unsigned long long>(c.grid_dim.x) * c.grid_dim.y * c.grid_dim.z;
  }
  [[nodiscard]] unsigned long long thread_rank() const {
    return block_rank() * host_detail::block_threads() + host_detail::block_rank();
  }
  [[nodiscard]] unsigned long long size() const { return num_blocks() * host_detail::block_threads(); }
  [[nodiscard]] unsigned long long num_threads() const { return size(); }
  [[nodiscard]] dim3 dim_blocks() const { return host_detail::coords().grid_dim; }
  [[nodiscard]] dim3 block_index() const { return dim3(host_detail::coords().block_idx); }
};

inline grid_group this_grid() { return grid_group(host_detail::Make{}); }

template <typename Group>
void sync(const Group& group, host_detail::Site site = host_detail::Site::current()) {
  group.sync(site);
}
template <typename Group>
auto thread_rank(const Group& group) {
  return group.thread_rank();
}
template <typename Group>
auto group_size(const Group& group) {
  return group.size();
}

}  // namespace cooperative_groups
// NOLINTEND(bugprone-reserved-identifier)
