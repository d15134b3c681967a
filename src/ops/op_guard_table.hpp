// ops/op_guard_table.hpp: one role's guard as data: the ordered table of the reasons it can refuse
// with (the seeds' order, which is also each reason's log slot), and the once-per-process log
// slots derived from that table: one per reason, then the role's own (it ran).
// Invariants:
// - slot_of() and claim() answer only for reasons in the table: a reason outside it has no slot
//   and is never logged (the tests hold every guard's returns to its table);
// - a verdict with the lever off logs nothing unless the role ran (op_log_slot's rule);
// - claim() is true exactly once per slot per table object, whatever the threads.
// Every library guard (BA twin, BA tensor core, FP8 twin, fused SiLU-mul twin) holds one of these
// as a function-local static, so the log flags live as long as the process.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ground/once_slots.hpp"
#include "ops/log_once.hpp"
#include "ops/op_verdict.hpp"

namespace metrale::ops {

class GuardTable {
 public:
  explicit GuardTable(std::span<const std::string_view> reasons) : reasons_(reasons), said_(reasons.size() + 1) {}

  [[nodiscard]] std::span<const std::string_view> reasons() const { return reasons_; }
  // Log slots: one per reason, then the role's own.
  [[nodiscard]] std::size_t slot_count() const { return reasons_.size() + 1; }
  // The reasons as a declaration's RoleDecl::reasons.
  [[nodiscard]] std::vector<std::string> declared_reasons() const;

  // The slot a verdict logs under (nullopt `reject`: the role ran). Pure.
  [[nodiscard]] std::optional<OpLogSlot> slot_of(std::optional<std::string_view> reject, bool requested) const {
    return op_log_slot(reject, requested, reasons_);
  }
  // Claims the verdict's slot in `said` (a test's own flags); true the first time.
  bool claim(std::optional<std::string_view> reject, bool requested, OnceSlots& said) const;
  // The same for a guard that speaks in a combined pick only when consulted and logs nothing,
  // not even a run, with its lever off (the BA tensor-core and decode guards): `ran` when its
  // role ran, else its reason, none when it was not consulted (then no slot). Pure / claims once.
  [[nodiscard]] std::optional<OpLogSlot> consulted_slot(bool ran, std::optional<std::string_view> reject,
                                                        bool requested) const {
    return requested ? slot_of(consulted_verdict(ran, reject), requested) : std::nullopt;
  }
  bool claim_consulted(bool ran, std::optional<std::string_view> reject, bool requested, OnceSlots& said) const {
    return requested && claim(consulted_verdict(ran, reject), requested, said);
  }
  // The process-wide flags of this table.
  [[nodiscard]] OnceSlots& process_slots() const { return said_; }

 private:
  // nullopt when the role ran; else its reason, or the empty reason (in no table: no slot) when
  // the guard was not consulted.
  static std::optional<std::string_view> consulted_verdict(bool ran, std::optional<std::string_view> reject) {
    return ran ? std::nullopt : std::optional<std::string_view>(reject.value_or(std::string_view{}));
  }
  std::span<const std::string_view> reasons_;
  mutable OnceSlots said_;
};

// Logs `line` through metrale::logger() at info when there is one (a claimed slot's line).
void log_verdict_line(const std::optional<std::string>& line);

// The one process-wide table of the reason list `Reasons` (a namespace-scope array), so each
// guard's log slots are claimed once per process however many call sites ask.
template <const auto& Reasons>
const GuardTable& guard_table_of() {
  static const GuardTable table(Reasons);
  return table;
}

}  // namespace metrale::ops
