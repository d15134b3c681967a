// op_guard_table.cpp: a role's guard table's slots, and the one place verdict lines are logged.
#include "ops/op_guard_table.hpp"

#include "ground/log.hpp"

namespace metrale::ops {

std::vector<std::string> GuardTable::declared_reasons() const { return {reasons_.begin(), reasons_.end()}; }

bool GuardTable::claim(std::optional<std::string_view> reject, bool requested, OnceSlots& said) const {
  const auto slot = slot_of(reject, requested);
  return slot && said.claim(slot->flag_index(reasons_.size()));
}

void log_verdict_line(const std::optional<std::string>& line) {
  if (line) {
    logger().info("{}", *line);
  }
}

}  // namespace metrale::ops
