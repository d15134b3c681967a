// ssm_ba_gates_guard.cpp: the BA-gates twin's guard, pick and verdict log.
#include "ops/ssm_ba_gates/ssm_ba_gates_guard.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "metrale/target/levers.hpp"
#include "ops/op_guard_table.hpp"
#include "ops/op_verdict.hpp"

namespace metrale::ops {

std::uint32_t ba_gates_min_tokens(std::uint32_t sm_count) { return min_ctas(sm_count); }

std::optional<std::string_view> ssm_ba_gates_hopper_reject(bool requested, bool kernel_present, std::uint32_t m,
                                                           std::uint32_t n, std::uint32_t k, std::uint32_t k_stride,
                                                           std::uint32_t sm_count) {
  return first_failed({{kBaGatesRejects[0], requested},
                       {kBaGatesRejects[1], kernel_present},
                       {kBaGatesRejects[2], n != 0 && k != 0},
                       {kBaGatesRejects[3], k % 8 == 0},
                       {kBaGatesRejects[4], k_stride >= k},
                       {kBaGatesRejects[5], m >= ba_gates_min_tokens(sm_count)}});
}

BaGatesPick ba_gates_pick(bool requested, KernelHandle parent, KernelHandle twin, std::uint32_t m, std::uint32_t n,
                          std::uint32_t k, std::uint32_t k_stride, std::uint32_t sm_count, bool parent_launchable) {
  const auto reject = ssm_ba_gates_hopper_reject(requested, twin.present(), m, n, k, k_stride, sm_count);
  const bool only_a_preference = reject == kBaGatesRejects[0] || reject == kBaGatesTooFewTokens;
  if (!reject || (!parent_launchable && twin.present() && only_a_preference)) {
    return BaGatesPick{twin, true, std::nullopt};
  }
  return BaGatesPick{parent, false, reject};
}

const GuardTable& ba_gates_guard() {
  static const GuardTable table(kBaGatesRejects);
  return table;
}

std::optional<OpLogSlot> ba_gates_log_slot(const BaGatesPick& pick, bool requested) {
  return ba_gates_guard().slot_of(pick.reject, requested);
}

std::optional<std::string> ba_gates_log_line(const BaGatesPick& pick, bool requested, std::uint32_t m,
                                             OnceSlots& said) {
  if (!ba_gates_guard().claim(pick.reject, requested, said)) {
    return std::nullopt;
  }
  if (pick.reject) {
    return fmt::format("SSM ba_gates: the Hopper twin is NOT running at M={}: {} (METRALE_SSM_BA_GATES_HOPPER)", m,
                       *pick.reject);
  }
  return fmt::format(
      "SSM ba_gates: dense_gemm_ba_gates_prefill_hopper (METRALE_SSM_BA_GATES_HOPPER) M={} block={} grid=(M,1,1)", m,
      kBaGatesBlock);
}

OnceSlots& ba_gates_log_slots() { return ba_gates_guard().process_slots(); }

void ba_gates_log(const BaGatesPick& pick, bool requested, std::uint32_t m) {
  log_verdict_line(ba_gates_log_line(pick, requested, m, ba_gates_log_slots()));
}

}  // namespace metrale::ops
