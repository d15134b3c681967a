// silu_mul_fp8_quant_guard.cpp: the fused SiLU-and-mul FP8 twin's guard, pick and verdict log.
#include "ops/silu_mul_fp8_quant/silu_mul_fp8_quant_guard.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "metrale/target/levers.hpp"
#include "ops/fp8_act_quant/fp8_act_quant_floor.hpp"
#include "ops/op_guard_table.hpp"
#include "ops/op_verdict.hpp"

namespace metrale::ops {

std::optional<std::string_view> silu_mul_fp8_quant_fused_reject(bool requested, bool twin_present, bool parent_present,
                                                                std::uint32_t m, std::uint32_t k,
                                                                std::uint32_t sm_count, std::uint32_t groups) {
  // Without both parent kernels a refusal would hand the launch to a parent that cannot run, so
  // past the twin's own presence no condition can refuse it.
  const bool parent_absent = !parent_present;
  return first_failed(
      {{kSiluMulRejects[1], twin_present},
       {kSiluMulRejects[0], parent_absent || requested},
       {kSiluMulTooFewCtas, parent_absent || fp8_quant_hopper_ctas(m, k, groups) >= min_ctas(sm_count)}});
}

std::uint32_t silu_mul_fused_min_m(std::uint32_t k, std::uint32_t sm_count, std::uint32_t groups) {
  return fp8_quant_hopper_min_m(k, sm_count, groups);
}

SiluMulFp8QuantPick silu_mul_fp8_quant_pick(bool requested, const SiluMulFp8QuantKernels& kernels, std::uint32_t m,
                                            std::uint32_t k, std::uint32_t sm_count) {
  const std::uint32_t groups = std::max<std::uint32_t>(kernels.twin_params.groups, 1);
  SiluMulFp8QuantPick pick;
  pick.reject = silu_mul_fp8_quant_fused_reject(requested, kernels.twin.present(), kernels.parent_present(), m, k,
                                                sm_count, groups);
  pick.twin = !pick.reject.has_value();
  pick.requested = requested;
  if (pick.twin) {
    pick.grid = fp8_quant_grid(true, m, k, groups);
    pick.block = Dim3{kernels.twin_params.lanes * groups, 1, 1};
  }
  return pick;
}

const GuardTable& silu_mul_guard() {
  static const GuardTable table(kSiluMulRejects);
  return table;
}

std::optional<OpLogSlot> silu_mul_log_slot(const SiluMulFp8QuantPick& pick) {
  return silu_mul_guard().slot_of(pick.reject, pick.requested);
}

std::optional<std::string> silu_mul_log_line(const SiluMulFp8QuantPick& pick, std::uint32_t m, std::uint32_t k,
                                             OnceSlots& said) {
  if (!silu_mul_guard().claim(pick.reject, pick.requested, said)) {
    return std::nullopt;
  }
  if (pick.reject) {
    return fmt::format(
        "SiLU-mul FP8 quant: the fused twin is NOT running at M={} K={}: {} (METRALE_SILU_MUL_FP8_QUANT_FUSED)", m, k,
        *pick.reject);
  }
  return fmt::format("SiLU-mul FP8 quant: {} (METRALE_SILU_MUL_FP8_QUANT_FUSED) M={} K={} grid=({},{},1) block={}",
                     kSiluMulTwinKernel, m, k, pick.grid.x, pick.grid.y, pick.block.x);
}

OnceSlots& silu_mul_log_slots() { return silu_mul_guard().process_slots(); }

void silu_mul_log(const SiluMulFp8QuantPick& pick, std::uint32_t m, std::uint32_t k) {
  log_verdict_line(silu_mul_log_line(pick, m, k, silu_mul_log_slots()));
}

}  // namespace metrale::ops
