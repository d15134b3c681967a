// fp8_act_quant_floor.cpp: the FP8 twin's CTA floor, grid, guard, pick and verdict log.
#include "ops/fp8_act_quant/fp8_act_quant_floor.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "metrale/target/levers.hpp"
#include "ops/op_guard_table.hpp"
#include "ops/op_verdict.hpp"

namespace metrale::ops {
namespace {

std::uint32_t saturate_u32(std::uint64_t value) {
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(value, std::numeric_limits<std::uint32_t>::max()));
}

}  // namespace

Dim3 fp8_quant_grid(bool twin, std::uint32_t m, std::uint32_t k, std::uint32_t groups) {
  const std::uint32_t per_cta = std::max<std::uint32_t>(groups, 1);
  const std::uint32_t row_groups = k / kFp8QuantGroupSize;
  const std::uint32_t y = twin ? (row_groups + per_cta - 1) / per_cta : row_groups / per_cta;
  return Dim3{m, y, 1};
}

std::uint32_t fp8_quant_min_ctas(std::uint32_t sm_count) { return min_ctas(sm_count); }

std::uint32_t fp8_quant_hopper_ctas(std::uint32_t m, std::uint32_t k, std::uint32_t groups) {
  return saturate_u32(fp8_quant_grid(true, m, k, groups).volume());
}

std::uint32_t fp8_quant_hopper_min_m(std::uint32_t k, std::uint32_t sm_count, std::uint32_t groups) {
  const std::uint32_t y = std::max<std::uint32_t>(fp8_quant_grid(true, 1, k, groups).y, 1);
  return (fp8_quant_min_ctas(sm_count) + y - 1) / y;
}

std::optional<std::string_view> fp8_act_quant_hopper_reject(bool requested, bool twin_present, bool shared_present,
                                                            std::uint32_t m, std::uint32_t k, std::uint32_t sm_count,
                                                            std::uint32_t groups) {
  // Without the shared kernel a refusal would hand the launch to nothing, so past the twin's own
  // presence no condition can refuse it.
  const bool shared_absent = !shared_present;
  return first_failed(
      {{kFp8QuantRejects[1], twin_present},
       {kFp8QuantRejects[0], shared_absent || requested},
       {kFp8QuantTooFewCtas, shared_absent || fp8_quant_hopper_ctas(m, k, groups) >= fp8_quant_min_ctas(sm_count)}});
}

Fp8QuantPick fp8_quant_pick(bool requested, const Fp8QuantKernels& kernels, std::uint32_t m, std::uint32_t k,
                            std::uint32_t sm_count) {
  const auto reject = fp8_act_quant_hopper_reject(requested, kernels.twin.present(), kernels.shared.present(), m, k,
                                                  sm_count, kernels.twin_params.groups);
  const bool twin = !reject.has_value();
  const KernelParams& params = twin ? kernels.twin_params : kernels.shared_params;
  Fp8QuantPick pick;
  pick.kernel = twin ? kernels.twin : kernels.shared;
  pick.grid = fp8_quant_grid(twin, m, k, params.groups);
  pick.block = Dim3{params.lanes * std::max<std::uint32_t>(params.groups, 1), 1, 1};
  pick.twin = twin;
  pick.reject = reject;
  pick.requested = requested;
  return pick;
}

const GuardTable& fp8_quant_guard() {
  static const GuardTable table(kFp8QuantRejects);
  return table;
}

std::optional<OpLogSlot> fp8_quant_log_slot(const Fp8QuantPick& pick) {
  return fp8_quant_guard().slot_of(pick.reject, pick.requested);
}

std::optional<std::string> fp8_quant_log_line(const Fp8QuantPick& pick, std::uint32_t m, std::uint32_t k,
                                              OnceSlots& said) {
  if (!fp8_quant_guard().claim(pick.reject, pick.requested, said)) {
    return std::nullopt;
  }
  if (pick.reject) {
    return fmt::format("FP8 act-quant: the Hopper twin is NOT running at M={} K={}: {} (METRALE_FP8_ACT_QUANT_HOPPER)",
                       m, k, *pick.reject);
  }
  return fmt::format(
      "FP8 act-quant: per_token_group_quant_fp8_hopper (METRALE_FP8_ACT_QUANT_HOPPER) M={} K={} grid=({},{},1) "
      "block={}",
      m, k, pick.grid.x, pick.grid.y, pick.block.x);
}

OnceSlots& fp8_quant_log_slots() { return fp8_quant_guard().process_slots(); }

void fp8_quant_log(const Fp8QuantPick& pick, std::uint32_t m, std::uint32_t k) {
  log_verdict_line(fp8_quant_log_line(pick, m, k, fp8_quant_log_slots()));
}

}  // namespace metrale::ops
