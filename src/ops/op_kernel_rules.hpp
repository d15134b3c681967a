// ops/op_kernel_rules.hpp: the template constraints of the library's kernels (beyond which
// parameters each takes), as KernelDeclaration::rule. Pure functions.
#pragma once

#include <optional>

#include "metrale/target/hardware_target.hpp"

namespace metrale::ops {

std::optional<KernelParamsProblem> check_ssm_ba_gates(const KernelParams& p);
std::optional<KernelParamsProblem> check_ssm_ba_gates_hopper(const KernelParams& p);
std::optional<KernelParamsProblem> check_ssm_ba_gates_mma(const KernelParams& p);
std::optional<KernelParamsProblem> check_fp8_act_quant(const KernelParams& p);
std::optional<KernelParamsProblem> check_fp8_act_quant_hopper(const KernelParams& p);

}  // namespace metrale::ops
