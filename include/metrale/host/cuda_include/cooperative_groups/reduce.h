// metrale/host/cuda_include/cooperative_groups/reduce.h: what `#include <cooperative_groups/reduce.h>`
// finds under the host JIT: cg::reduce over a thread_block_tile or a coalesced_group, and the
// operators CUDA gives for it (plus, less = the minimum, greater = the maximum, bit_and, bit_or,
// bit_xor; any callable of two values works too).
// Invariants: every thread of the group receives the same result; a tile reduces by an xor
// butterfly (each step one shfl_xor), a coalesced group by a shfl_down tree over its ranks and a
// broadcast from rank 0, a multi-warp tile by one block-wide exchange folded in rank order, so for
// a commutative operator every lane computes the same bits; all
// of a reduction's shuffles carry the caller's CallSite, so two reductions in a kernel are two
// sync points.
#pragma once

#include "metrale/host/cuda_include/cooperative_groups.h"

namespace cooperative_groups {

template <typename T>
struct plus {
  constexpr T operator()(const T& a, const T& b) const { return a + b; }
};
template <typename T>
struct less {
  constexpr T operator()(const T& a, const T& b) const { return b < a ? b : a; }
};
template <typename T>
struct greater {
  constexpr T operator()(const T& a, const T& b) const { return a < b ? b : a; }
};
template <typename T>
struct bit_and {
  constexpr T operator()(const T& a, const T& b) const { return a & b; }
};
template <typename T>
struct bit_or {
  constexpr T operator()(const T& a, const T& b) const { return a | b; }
};
template <typename T>
struct bit_xor {
  constexpr T operator()(const T& a, const T& b) const { return a ^ b; }
};

namespace host_detail_reduce {

template <unsigned int Size, typename ParentT, typename T, typename Op>
requires(Size <= 32) T
    reduce_group(const thread_block_tile<Size, ParentT>& group, T value, Op& op, const host_detail::Site& site) {
  for (unsigned offset = Size / 2; offset > 0; offset /= 2) {
    value = op(value, group.shfl_xor(value, offset, site));
  }
  return value;
}

// A multi-warp tile: one block-wide exchange, then every thread folds its tile's slots in rank order.
template <unsigned int Size, typename ParentT, typename T, typename Op>
requires(Size > 32) T
    reduce_group(const thread_block_tile<Size, ParentT>& group, T value, Op& op, const host_detail::Site& site) {
  const unsigned char* slots = host_detail::exchange(value, site);
  const unsigned first = group.first_rank();
  T result = host_detail::slot(slots, first, value);
  for (unsigned r = 1; r < Size; ++r) {
    result = op(result, host_detail::slot(slots, first + r, value));
  }
  return result;
}

template <typename T, typename Op>
T reduce_group(const coalesced_group& group, T value, Op& op, const host_detail::Site& site) {
  const unsigned rank = group.thread_rank();
  const unsigned size = group.size();
  for (unsigned offset = 1; offset < size; offset *= 2) {
    const T other = group.shfl_down(value, offset, site);
    if (rank + offset < size) {
      value = op(value, other);
    }
  }
  return group.shfl(value, 0, site);
}

}  // namespace host_detail_reduce

template <typename Group, typename T, typename Op>
std::remove_cvref_t<T> reduce(const Group& group, T&& value, Op&& op,
                              host_detail::Site site = host_detail::Site::current()) {
  return host_detail_reduce::reduce_group(group, std::remove_cvref_t<T>(value), op, site);
}

}  // namespace cooperative_groups
