// kernel_guard.cpp: the guard helper: a pure verdict, and its once-per-slot log line.
#include <fmt/format.h>

#include "ground/log.hpp"
#include "ground/once_slots.hpp"
#include "metrale/error.hpp"
#include "metrale/target/levers.hpp"

namespace metrale {
namespace {

constexpr std::size_t kTwinSlot = 0;
constexpr std::size_t kLeverSlot = 1;
constexpr std::size_t kAbsentSlot = 2;
constexpr std::size_t kFirstConditionSlot = 3;

// The verdict and the log slot it belongs to, found in one pass: the lever, the handle, then the
// conditions in order.
struct SlottedPick {
  GuardPick pick;
  std::size_t slot = kTwinSlot;
};

SlottedPick slotted_pick(KernelHandle twin, bool lever, std::initializer_list<GuardCondition> conditions) {
  if (!lever) {
    return {{false, kGuardLeverOff}, kLeverSlot};
  }
  if (!twin.present()) {
    return {{false, kGuardTwinAbsent}, kAbsentSlot};
  }
  std::size_t slot = kFirstConditionSlot;
  for (const GuardCondition& condition : conditions) {
    if (!condition.holds) {
      return {{false, condition.reason}, slot};
    }
    ++slot;
  }
  return {{true, {}}, kTwinSlot};
}

}  // namespace

std::optional<std::string_view> first_failed(std::initializer_list<GuardCondition> conditions) {
  for (const GuardCondition& condition : conditions) {
    if (!condition.holds) {
      return condition.reason;
    }
  }
  return std::nullopt;
}

GuardPick guard_pick(KernelHandle twin, bool lever, std::initializer_list<GuardCondition> conditions) {
  return slotted_pick(twin, lever, conditions).pick;
}

KernelGuard::KernelGuard(std::string name, std::size_t conditions)
    : name_(std::move(name)),
      conditions_(conditions),
      logged_(std::make_unique<OnceSlots>(kFirstConditionSlot + conditions)) {}
KernelGuard::KernelGuard(KernelGuard&&) noexcept = default;
KernelGuard& KernelGuard::operator=(KernelGuard&&) noexcept = default;
KernelGuard::~KernelGuard() = default;

GuardDecision KernelGuard::decide(KernelHandle twin, bool lever, std::initializer_list<GuardCondition> conditions) {
  if (conditions.size() != conditions_) {
    throw ArgumentError(
        fmt::format("guard {}: {} conditions given, it was made for {}", name_, conditions.size(), conditions_));
  }
  const auto [verdict, slot] = slotted_pick(twin, lever, conditions);
  GuardDecision decision{verdict, std::nullopt};
  if (logged_->claim(slot)) {
    decision.log_line = verdict.twin ? fmt::format("guard {}: the twin runs", name_)
                                     : fmt::format("guard {}: the parent runs ({})", name_, verdict.reason);
  }
  return decision;
}

GuardPick KernelGuard::pick(KernelHandle twin, bool lever, std::initializer_list<GuardCondition> conditions) {
  GuardDecision decision = decide(twin, lever, conditions);
  if (decision.log_line) {
    logger().info("{}", *decision.log_line);
  }
  return decision.pick;
}

}  // namespace metrale
