// tests/support/fp8_as_data.hpp: the library's FP8 activation-quant op re-declared as data
// (metrale/ops/op_spec.hpp), from its folder's rules (src/ops/fp8_act_quant/fp8_act_quant.cpp):
// the same two kernels (the catalog's names, template and expressions), the same arguments, the
// same shape validation as rules, the twin's guard as three {reason, condition} rules in the order
// the library's guard evaluates them, the launcher's argument order, the grids of fp8_quant_grid.
// Tests compare it with the library's declaration (tests/unit/ops_spec_fp8_test.cpp) and plant
// mistakes in it (ops_spec_check_test.cpp).
#pragma once

#include <string>

#include "ops/op_spec.hpp"

namespace metrale::test {

inline ops::OpSpec fp8_as_data_spec(std::string name = "fp8_act_quant_data") {
  using ops::ArgKind;
  using ops::DType;
  ops::OpSpec spec;
  spec.name = std::move(name);
  spec.summary = "fp8_act_quant declared as data";
  spec.args = {
      ops::tensor_arg("x", ArgKind::kInput, DType::kBf16, 16, {"m", "x_row_stride"}, "activations"),
      ops::tensor_arg("q", ArgKind::kOutput, DType::kE4m3, 8, {"m", "k"}, "e4m3fn codes"),
      ops::tensor_arg("scales", ArgKind::kOutput, DType::kFp32, 4, {"m", "k/128"}, "scales"),
      ops::scalar_arg("m", std::nullopt, UINT32_MAX, "tokens"),
      ops::scalar_arg("k", std::nullopt, UINT32_MAX, "row length"),
      ops::scalar_arg("x_row_stride", 0, UINT32_MAX, "x's row stride (0: k)").with_zero_means("k"),
      ops::scalar_arg("scale_layout", 0, 1, "0 row-major, 1 column-major"),
      ops::scalar_arg("m_aligned", 0, UINT32_MAX, "column-major scales' row count"),
      ops::scalar_arg("pow2_scales", 0, 1, "1: UE8M0 scales"),
  };
  spec.shape_rules = {
      {"empty shape: M and K must be positive", "m > 0 && k > 0"},
      {"K is not a multiple of the group size 128", "k % 128 == 0"},
      {"x_row_stride < K: the activation row is shorter than K", "x_row_stride >= k"},
      {"x_row_stride is not a multiple of 8", "x_row_stride % 8 == 0"},
      // M x stride bf16 bytes fit 64 bits exactly when M x stride fits 63 (an overflow refuses).
      {"x extent (M x x_row_stride bf16) overflows 64 bits", "m * x_row_stride >= 0"},
      {"column-major scales need m_aligned >= M and a multiple of 4",
       "scale_layout == 0 || (m_aligned >= m && m_aligned % 4 == 0)"},
      {"M exceeds the largest grid.x", "m <= 2147483647"},
      {"K has more groups per row than grid.y allows", "k / 128 <= 65535"},
  };
  const std::vector<std::string> kernel_args = {"x",
                                                "q",
                                                "scales",
                                                "m",
                                                "k",
                                                "x_row_stride",
                                                "scale_layout == 1 ? 1 : k / 128",
                                                "scale_layout == 1 ? m_aligned : 1",
                                                "pow2_scales"};
  ops::SpecRole parent;
  parent.role = "parent";
  parent.aliases = {"shared"};
  parent.kernel = {"fp8_act_quant",
                   "fp8_act_quant.cuh",
                   "",
                   "metrale::kernels::per_token_group_quant_fp8<{lanes}, {groups}>",
                   {"lanes", "groups"},
                   false};
  parent.kernel_args = kernel_args;
  parent.grid = {"m", "k / 128 / max(parent.groups, 1)", "1"};
  parent.block = {"parent.lanes * max(parent.groups, 1)", "1", "1"};
  ops::SpecRole twin;
  twin.role = "twin";
  twin.kernel = {"fp8_act_quant_hopper",
                 "fp8_act_quant.cuh",
                 "",
                 "metrale::kernels::per_token_group_quant_fp8_hopper<{lanes}, {groups}>",
                 {"lanes", "groups"},
                 true};
  twin.kernel_args = kernel_args;
  twin.grid = {"m", "ceil_div(k / 128, max(twin.groups, 1))", "1"};
  twin.block = {"twin.lanes * max(twin.groups, 1)", "1", "1"};
  twin.lever = "fp8_act_quant_hopper";
  twin.lever_env = "METRALE_FP8_ACT_QUANT_HOPPER";
  // Without the parent a refusal would hand the launch to nothing: past the twin's own presence
  // no rule refuses it then (the library's guard says the same).
  twin.guard = {
      {"kernel absent from this image (kernels/hopper only)", "twin.present"},
      {"not requested", "!parent.present || fp8_act_quant_hopper"},
      {"too few CTAs to fill the device at 8 K-groups per CTA",
       "!parent.present || m * ceil_div(k / 128, max(twin.groups, 1)) >= 2 * sm_count"},
  };
  spec.roles = {parent, twin};
  spec.check_shapes = {{{"m", 3}, {"k", 1152}}, {{"m", 5}, {"k", 256}, {"x_row_stride", 264}, {"pow2_scales", 1}}};
  return spec;
}

}  // namespace metrale::test
