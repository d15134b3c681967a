// metrale/host/cuda_include/cooperative_groups/memcpy_async.h: what
// `#include <cooperative_groups/memcpy_async.h>` finds under the host JIT: cg::memcpy_async(group,
// dst, src, bytes) (and its element-count form) with cg::wait(group) and cg::wait_prior<N>(group).
// Invariants: the group's rank 0 copies at once, so the bytes are in place when any member
// returns from wait(), which is the group's sync (as on a GPU, reading the destination before
// wait is the kernel's race); the cuda::aligned_size_t and pipeline/barrier forms are not
// given: such a kernel fails the host JIT's compile naming the function.
#pragma once

#include "metrale/host/cuda_include/cooperative_groups.h"

namespace cooperative_groups {

template <typename Group>
void memcpy_async(const Group& group, void* dst, const void* src, std::size_t bytes) {
  if (group.thread_rank() == 0) {
    std::memcpy(dst, src, bytes);
  }
}
template <typename Group, typename T>
void memcpy_async(const Group& group, T* dst, std::size_t dst_count, const T* src, std::size_t src_count) {
  if (group.thread_rank() == 0) {
    std::memcpy(static_cast<void*>(dst), static_cast<const void*>(src),
                (dst_count < src_count ? dst_count : src_count) * sizeof(T));
  }
}

template <typename Group>
void wait(const Group& group, host_detail::Site site = host_detail::Site::current()) {
  group.sync(site);
}
template <unsigned int NumStages, typename Group>
void wait_prior(const Group& group, host_detail::Site site = host_detail::Site::current()) {
  group.sync(site);
}

}  // namespace cooperative_groups
