// The kernel catalog's constraints as a pure function, and METRALE_LOG_LEVEL parsing.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "ground/log.hpp"
#include "hardware/kernel_catalog.hpp"
#include "ops/op_kernels.hpp"

using metrale::KernelParams;
using metrale::ops::kernel_params_violation;

TEST_CASE("kernel parameter constraints accept the shipped shapes and name the broken rule", "[target][catalog]") {
  CHECK_FALSE(kernel_params_violation("ssm_ba_gates", {256, 64, 0}));
  CHECK_FALSE(kernel_params_violation("ssm_ba_gates", {64, 64, 0}));
  CHECK_FALSE(kernel_params_violation("ssm_ba_gates", {1024, 64, 0}));
  CHECK_FALSE(kernel_params_violation("ssm_ba_gates_hopper", {256, 64, 8}));
  CHECK_FALSE(kernel_params_violation("ssm_ba_gates_hopper", {128, 64, 16}));
  CHECK_FALSE(kernel_params_violation("ssm_ba_gates_mma", {256, 64, 8}));
  CHECK_FALSE(kernel_params_violation("ssm_ba_gates_mma", {128, 32, 2}));
  CHECK_FALSE(kernel_params_violation("ssm_ba_gates_mma", {32, 16, 10}));
  CHECK_FALSE(kernel_params_violation("ssm_ba_gates_mma", {512, 64, 8}));
  CHECK_FALSE(kernel_params_violation("ssm_ba_gates_mma", {256, 128, 6}));  // 6 x 256 rows x 144 bytes
  CHECK_FALSE(kernel_params_violation("fp8_act_quant", {0, 16, 1}));
  CHECK_FALSE(kernel_params_violation("fp8_act_quant_hopper", {0, 16, 8}));
  CHECK_FALSE(kernel_params_violation("fp8_act_quant_hopper", {0, 16, 32}));
  CHECK_FALSE(kernel_params_violation("fp8_act_quant_hopper", {0, 8, 8}));
  CHECK_FALSE(kernel_params_violation("fp8_act_quant_hopper", {0, 4, 16}));

  struct Bad {
    const char* kernel;
    KernelParams params;
    const char* param;
  };
  const Bad bad[] = {
      {"ssm_ba_gates", {256, 32, 0}, "lanes"},
      {"ssm_ba_gates", {1088, 64, 0}, "block"},
      {"ssm_ba_gates", {0, 64, 0}, "block"},
      {"ssm_ba_gates", {96, 64, 0}, "block"},
      {"ssm_ba_gates", {256, 64, 1}, "groups"},
      {"ssm_ba_gates_hopper", {256, 64, 0}, "groups"},
      {"ssm_ba_gates_hopper", {256, 64, 17}, "groups"},
      {"ssm_ba_gates_hopper", {2048, 64, 8}, "block"},
      {"ssm_ba_gates_mma", {256, 72, 8}, "lanes"},
      {"ssm_ba_gates_mma", {256, 80, 8}, "block"},  // 5 token tiles over 8 warps
      {"ssm_ba_gates_mma", {256, 8, 8}, "lanes"},
      {"ssm_ba_gates_mma", {256, 144, 4}, "lanes"},
      {"ssm_ba_gates_mma", {256, 48, 8}, "block"},
      {"ssm_ba_gates_mma", {96, 64, 8}, "block"},
      {"ssm_ba_gates_mma", {1024, 16, 8}, "block"},
      {"ssm_ba_gates_mma", {256, 64, 0}, "groups"},
      {"ssm_ba_gates_mma", {256, 64, 1}, "groups"},
      {"ssm_ba_gates_mma", {256, 64, 17}, "groups"},
      {"ssm_ba_gates_mma", {256, 128, 7}, "groups"},  // 7 x 256 rows x 144 bytes: past 227 KiB
      {"fp8_act_quant", {0, 12, 1}, "lanes"},
      {"fp8_act_quant", {0, 2, 1}, "lanes"},
      {"fp8_act_quant_hopper", {0, 32, 8}, "lanes"},
      {"fp8_act_quant", {0, 16, 2}, "groups"},
      {"fp8_act_quant", {16, 16, 1}, "block"},
      {"fp8_act_quant_hopper", {0, 16, 0}, "groups"},
      {"fp8_act_quant_hopper", {0, 16, 33}, "groups"},
      {"fp8_act_quant_hopper", {128, 16, 8}, "block"},
  };
  for (const auto& b : bad) {
    INFO(b.kernel << " " << b.params.tag());
    const auto problem = metrale::ops::check_kernel_params(b.kernel, b.params);
    REQUIRE(problem.has_value());
    CHECK(problem->param == b.param);
    const auto sentence = kernel_params_violation(b.kernel, b.params);
    REQUIRE(sentence.has_value());
    CHECK_THAT(*sentence, Catch::StartsWith(std::string(b.param) + " = "));
  }
  const auto unknown = kernel_params_violation("ssm_ba_gatez", {256, 64, 0});
  REQUIRE(unknown.has_value());
  CHECK_THAT(*unknown, Catch::Contains("unknown kernel 'ssm_ba_gatez'") && Catch::Contains("ssm_ba_gates_hopper"));
  CHECK(metrale::ops::library_catalog().names() ==
        std::vector<std::string>{"fp8_act_quant", "fp8_act_quant_hopper", "fused_add_rmsnorm", "fused_add_rmsnorm_vec",
                                 "silu_mul_bf16", "silu_mul_fp8_quant_fused", "ssm_ba_gates", "ssm_ba_gates_hopper",
                                 "ssm_ba_gates_mma", "ssm_ba_gates_splitk"});
  CHECK(metrale::ops::library_catalog().find("SSM_BA_GATES") == nullptr);
}

TEST_CASE("METRALE_LOG_LEVEL spellings", "[target][log]") {
  CHECK(metrale::parse_log_level("trace") == spdlog::level::trace);
  CHECK(metrale::parse_log_level("DEBUG") == spdlog::level::debug);
  CHECK(metrale::parse_log_level("info") == spdlog::level::info);
  CHECK(metrale::parse_log_level("warn") == spdlog::level::warn);
  CHECK(metrale::parse_log_level("Warning") == spdlog::level::warn);
  CHECK(metrale::parse_log_level("error") == spdlog::level::err);
  CHECK(metrale::parse_log_level("critical") == spdlog::level::critical);
  CHECK(metrale::parse_log_level("off") == spdlog::level::off);
  for (const char* bad : {"", "err", "verbose", "info ", "3"}) {
    INFO(bad);
    CHECK_FALSE(metrale::parse_log_level(bad).has_value());
  }
}
