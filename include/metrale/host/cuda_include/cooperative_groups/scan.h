// metrale/host/cuda_include/cooperative_groups/scan.h: what `#include <cooperative_groups/scan.h>`
// finds under the host JIT: cg::inclusive_scan and cg::exclusive_scan over a thread_block_tile
// (one warp or several) or a coalesced_group, with an operator (cg::plus by default).
// Invariants: rank r receives op over ranks 0..r (inclusive) or 0..r-1 (exclusive; rank 0 a
// value-initialised T, as CUDA gives it); a warp's group scans by shfl_up steps (Hillis-Steele),
// a multi-warp tile by one block-wide exchange folded in rank order; every shuffle carries the
// caller's CallSite. The *_scan_update forms (a cuda::atomic destination) are not given: such a
// kernel fails the host JIT's compile naming the function.
#pragma once

#include "metrale/host/cuda_include/cooperative_groups/reduce.h"

namespace cooperative_groups {

namespace host_detail_scan {

template <typename Group, typename T, typename Op>
T warp_inclusive(const Group& group, T value, Op& op, const host_detail::Site& site) {
  const unsigned rank = group.thread_rank();
  for (unsigned offset = 1; offset < group.size(); offset *= 2) {
    const T other = group.shfl_up(value, offset, site);
    if (rank >= offset) {
      value = op(other, value);
    }
  }
  return value;
}

template <unsigned int Size, typename ParentT, typename T, typename Op>
requires(Size <= 32) T
    inclusive(const thread_block_tile<Size, ParentT>& group, T value, Op& op, const host_detail::Site& site) {
  return warp_inclusive(group, value, op, site);
}
template <typename T, typename Op>
T inclusive(const coalesced_group& group, T value, Op& op, const host_detail::Site& site) {
  return warp_inclusive(group, value, op, site);
}
template <unsigned int Size, typename ParentT, typename T, typename Op>
requires(Size > 32) T
    inclusive(const thread_block_tile<Size, ParentT>& group, T value, Op& op, const host_detail::Site& site) {
  const unsigned char* slots = host_detail::exchange(value, site);
  const unsigned first = group.first_rank();
  T result = host_detail::slot(slots, first, value);
  for (unsigned r = 1; r <= group.thread_rank(); ++r) {
    result = op(result, host_detail::slot(slots, first + r, value));
  }
  return result;
}

}  // namespace host_detail_scan

template <typename Group, typename T, typename Op>
std::remove_cvref_t<T> inclusive_scan(const Group& group, T&& value, Op&& op,
                                      host_detail::Site site = host_detail::Site::current()) {
  return host_detail_scan::inclusive(group, std::remove_cvref_t<T>(value), op, site);
}
template <typename Group, typename T>
std::remove_cvref_t<T> inclusive_scan(const Group& group, T&& value,
                                      host_detail::Site site = host_detail::Site::current()) {
  plus<std::remove_cvref_t<T>> op;
  return host_detail_scan::inclusive(group, std::remove_cvref_t<T>(value), op, site);
}

// The inclusive scan moved up one rank: rank 0 gets T{}.
template <typename Group, typename T, typename Op>
std::remove_cvref_t<T> exclusive_scan(const Group& group, T&& value, Op&& op,
                                      host_detail::Site site = host_detail::Site::current()) {
  using V = std::remove_cvref_t<T>;
  const V inclusive = host_detail_scan::inclusive(group, V(value), op, site);
  if constexpr (requires { group.shfl_up(inclusive, 1U, site); }) {
    const V before = group.shfl_up(inclusive, 1U, site);
    return group.thread_rank() == 0 ? V{} : before;
  } else {
    const V before = group.shfl(inclusive, group.thread_rank() + group.size() - 1, site);
    return group.thread_rank() == 0 ? V{} : before;
  }
}
template <typename Group, typename T>
std::remove_cvref_t<T> exclusive_scan(const Group& group, T&& value,
                                      host_detail::Site site = host_detail::Site::current()) {
  return exclusive_scan(group, static_cast<T&&>(value), plus<std::remove_cvref_t<T>>(), site);
}

}  // namespace cooperative_groups
