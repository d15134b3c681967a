// kernel_guard.cpp: the guard helper: a pure verdict, and its once-per-slot log line.
#include <fmt/format.h>

#include "ground/log.hpp"
#include "metrale/error.hpp"
#include "metrale/target/levers.hpp"

namespace metrale {
namespace {

constexpr std::size_t kTwinSlot = 0;
constexpr std::size_t kLeverSlot = 1;
constexpr std::size_t kAbsentSlot = 2;
constexpr std::size_t kFirstConditionSlot = 3;

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
  if (const auto reason = first_failed({{kGuardLeverOff, lever}, {kGuardTwinAbsent, twin.present()}})) {
    return {false, *reason};
  }
  if (const auto reason = first_failed(conditions)) {
    return {false, *reason};
  }
  return {true, {}};
}

KernelGuard::KernelGuard(std::string name, std::size_t conditions)
    : name_(std::move(name)),
      conditions_(conditions),
      logged_(std::make_unique<std::atomic<bool>[]>(kFirstConditionSlot + conditions)) {
  for (std::size_t i = 0; i < kFirstConditionSlot + conditions_; ++i) {
    logged_[i].store(false, std::memory_order_relaxed);
  }
}

GuardPick KernelGuard::pick(KernelHandle twin, bool lever, std::initializer_list<GuardCondition> conditions) {
  if (conditions.size() != conditions_) {
    throw ArgumentError(
        fmt::format("guard {}: {} conditions given, it was made for {}", name_, conditions.size(), conditions_));
  }
  const GuardPick verdict = guard_pick(twin, lever, conditions);
  std::size_t slot = kTwinSlot;
  if (!verdict.twin) {
    slot = verdict.reason == kGuardLeverOff     ? kLeverSlot
           : verdict.reason == kGuardTwinAbsent ? kAbsentSlot
                                                : kFirstConditionSlot;
    if (slot == kFirstConditionSlot) {
      for (const GuardCondition& condition : conditions) {
        if (!condition.holds) {
          break;
        }
        ++slot;
      }
    }
  }
  if (!logged_[slot].exchange(true, std::memory_order_acq_rel)) {
    if (verdict.twin) {
      logger().info("guard {}: the twin runs", name_);
    } else {
      logger().info("guard {}: the parent runs ({})", name_, verdict.reason);
    }
  }
  return verdict;
}

}  // namespace metrale
