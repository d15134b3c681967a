// profile/profiled_ops.cpp: the ops the profile prices, found by their declared names, and each
// op's compulsory DRAM bytes at a shape (the floor its kernels are measured against).
#include <algorithm>
#include <array>

#include "metrale/ops/fp8_act_quant.hpp"
#include "ops/fused_add_rmsnorm/fused_add_rmsnorm.hpp"
#include "ops/silu_mul_fp8_quant/silu_mul_fp8_quant.hpp"
#include "profile/op_profile.hpp"

namespace metrale {

namespace {

// The ops the profile prices, by declared name (`metrale-jit profile NAME` dispatches here).
constexpr std::array<ProfiledOpInfo, 4> kProfiledOps{{
    {"ssm_ba_gates", "ba-gates", ProfiledOp::kBaGates, true},
    {"fp8_act_quant", "fp8-quant", ProfiledOp::kFp8Quant, false},
    {"silu_mul_fp8_quant", "silu-mul-fp8-quant", ProfiledOp::kSiluMulFp8Quant, false},
    {"fused_add_rmsnorm", "fused-add-rmsnorm", ProfiledOp::kFusedAddRmsnorm, false},
}};

}  // namespace

const ProfiledOpInfo* find_profiled_op(std::string_view op_name) {
  const auto* found = std::find_if(kProfiledOps.begin(), kProfiledOps.end(),
                                   [&](const ProfiledOpInfo& info) { return info.op_name == op_name; });
  return found == kProfiledOps.end() ? nullptr : &*found;
}

std::span<const ProfiledOpInfo> profiled_ops() { return kProfiledOps; }

const ProfiledOpInfo& profiled_op_info(ProfiledOp op) {
  return *std::find_if(kProfiledOps.begin(), kProfiledOps.end(),
                       [&](const ProfiledOpInfo& info) { return info.op == op; });
}

std::optional<ProfiledOp> parse_profiled_op(std::string_view name) {
  const auto* found = std::find_if(kProfiledOps.begin(), kProfiledOps.end(), [&](const ProfiledOpInfo& info) {
    return info.label == name || info.op_name == name;
  });
  return found == kProfiledOps.end() ? std::nullopt : std::optional<ProfiledOp>(found->op);
}

std::string_view to_string(ProfiledOp op) { return profiled_op_info(op).label; }

double compulsory_bytes(ProfiledOp op, const ProfileShape& shape) {
  const auto m = static_cast<double>(shape.m);
  const auto k = static_cast<double>(shape.k);
  if (op == ProfiledOp::kBaGates) {
    const auto n = static_cast<double>(shape.n);
    // x and W in bf16, gate_out in fp32 (2 nv = N columns), a_log and dt_bias fp32 [nv].
    return m * k * 2 + n * k * 2 + m * n * 4 + n / 2 * 4 * 2;
  }
  if (op == ProfiledOp::kSiluMulFp8Quant) {
    return ops::silu_mul_fp8_quant_floor_bytes(shape.m, shape.k);
  }
  if (op == ProfiledOp::kFusedAddRmsnorm) {  // K is hidden; in place, with the FP8 output
    return ops::fused_add_rmsnorm_floor_bytes(shape.m, shape.k, true);
  }
  // x in bf16, q in e4m3, one fp32 scale per 128-element group.
  return m * k * 2 + m * k + m * (k / ops::kFp8QuantGroupSize) * 4;
}

}  // namespace metrale
