// ops/log_once.hpp: the once-per-process log flags the ops keep, one per outcome slot.
// Invariants: claim(i) returns true exactly once per slot, whatever the threads; an op's verdict
// depends on M, so every outcome (the twin, each refusal reason) has its own slot and an early
// small request cannot hide a later line about another outcome.
#pragma once

#include <cstddef>

#include "ground/once_slots.hpp"

namespace metrale::ops {

// The slot one verdict logs under: the twin's, or the refusal reason at `reject_index` of the
// op's list of reasons.
struct OpLogSlot {
  bool twin = false;
  std::size_t reject_index = 0;

  // The flag index among `reject_count + 1` flags: reasons first, the twin's last.
  [[nodiscard]] constexpr std::size_t flag_index(std::size_t reject_count) const {
    return twin ? reject_count : reject_index;
  }
  friend constexpr bool operator==(const OpLogSlot&, const OpLogSlot&) = default;
};

using ::metrale::OnceSlots;

}  // namespace metrale::ops
