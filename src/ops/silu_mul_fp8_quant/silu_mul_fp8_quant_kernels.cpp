// silu_mul_fp8_quant_kernels.cpp: the SiLU-and-mul FP8 quant op's two kernel declarations and the
// parent step's parameter rule.
// Why the twin takes the FP8 twin's rule: it is the FP8 twin's group layout (a team of 16, 8 or 4
// lanes per 128-element group, GROUPS groups per CTA) with a different load.
#include "ops/silu_mul_fp8_quant/silu_mul_fp8_quant_kernels.hpp"

#include <fmt/format.h>

#include "ops/op_kernel_rules.hpp"

namespace metrale::ops {
namespace {

constexpr std::uint32_t kWarp = 32;
constexpr std::uint32_t kMaxBlock = 1024;

}  // namespace

std::optional<KernelParamsProblem> check_silu_mul_bf16(const KernelParams& p) {
  if (p.block < kWarp || p.block > kMaxBlock || p.block % kWarp != 0) {
    return KernelParamsProblem{"block",
                               fmt::format("block = {}: must be whole warps in [{}, {}]", p.block, kWarp, kMaxBlock)};
  }
  return std::nullopt;
}

void add_silu_mul_fp8_quant_kernels(KernelCatalog& catalog) {
  catalog.add({.kernel = std::string(kSiluMulParentKernel),
               .source = std::string(kSiluMulTemplateFile),
               .expression = fmt::format("{}<{{block}}>", kSiluMulParentTemplate),
               .params = {"block"},
               .twin_of = {},  // not a twin: the first of the parent's two launches
               .same_shape = false,
               .background = false,
               .rule = check_silu_mul_bf16});
  // The group max is exact in any order, so the twin may split a group as the FP8 twin does.
  catalog.add({.kernel = std::string(kSiluMulTwinKernel),
               .source = std::string(kSiluMulTemplateFile),
               .expression = fmt::format("{}<{{lanes}}, {{groups}}>", kSiluMulTwinTemplate),
               .params = {"lanes", "groups"},
               .twin_of = std::string(kSiluMulParentKernel),
               .same_shape = false,
               .background = true,
               .rule = check_fp8_act_quant_hopper});
}

}  // namespace metrale::ops
