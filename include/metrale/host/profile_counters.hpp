// metrale/host/profile_counters.hpp: the arithmetic a profiled host kernel does, counted where the
// templates already funnel it: the prelude's intrinsics (__fmaf_rn, ...), the special functions
// and the warp collectives. The prelude calls count() only in profiled translation units
// (METRALE_HOST_PROFILED); elsewhere its intrinsics count nothing and cost nothing.
// Invariant: count() is a no-op on an OS thread that is not running a profiled block.
#pragma once

#include <cstddef>
#include <cstdint>

namespace metrale::host::profile {

enum class Op : std::uint8_t {
  kFma,      // __fmaf_rn: 2 FLOPs
  kAdd,      // __fadd_rn
  kMul,      // __fmul_rn
  kDiv,      // __fdiv_rn, __fdividef, __frcp_rn
  kSpecial,  // expf, log1pf, __expf, rsqrtf, ...: the special-function unit's work
  kShuffle,  // one lane's __shfl_*_sync
  kVote,     // one lane's __ballot_sync / __any_sync / __all_sync
};
inline constexpr std::size_t kOpKinds = 7;

void count(Op op) noexcept;

}  // namespace metrale::host::profile
