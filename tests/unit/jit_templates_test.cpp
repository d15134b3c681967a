// jit_templates_test.cpp: the library's embedded kernel templates compile with NVRTC for every
// target's arch (no GPU needed), the variants of one template batched in one program, and
// every entry point resolves with its resources reported.
#include <catch2/catch.hpp>

#include "jit_test_support.hpp"
#include "metrale/jit/kernel_registry.hpp"

using namespace metrale;

TEST_CASE("the shipped templates compile for every target's arch", "[jit][templates]") {
  jit_test_support::ScopedEnv env("METRALE_TEMPLATE_DIR", std::nullopt);
  SourceSet sources;
  sources.add_embedded_templates();
  KernelRegistry::Options options;
  options.store = {};
  options.memory = std::make_shared<CompiledMemoryCache>();
  options.parallelism = 2;
  KernelRegistry registry(std::move(sources), options);
  registry.declare({"ssm_ba_gates", "ssm_ba_gates.cuh", "metrale::kernels::dense_gemm_ba_gates_prefill<256, 64>",
                    KernelParams{256, 64, 0}, false});
  registry.declare({"ssm_ba_gates_hopper", "ssm_ba_gates.cuh",
                    "metrale::kernels::dense_gemm_ba_gates_prefill_hopper<256, 64, 8>", KernelParams{256, 64, 8},
                    true});
  registry.declare({"fp8_act_quant", "fp8_act_quant.cuh", "metrale::kernels::per_token_group_quant_fp8<16, 1>",
                    KernelParams{0, 16, 1}, false});
  registry.declare({"fp8_act_quant_hopper", "fp8_act_quant.cuh",
                    "metrale::kernels::per_token_group_quant_fp8_hopper<16, 8>", KernelParams{0, 16, 8}, true});
  // hopper, gb10, b200, b300, and a generic device.
  const std::string arch = GENERATE(as<std::string>{}, "sm_90", "sm_121", "sm_100", "sm_103", "sm_89");
  const auto records = registry.build(arch);
  REQUIRE(records.size() == 4);
  for (const BuildRecord& record : records) {
    INFO(arch << " " << record.kernel << ":\n" << record.entry->log);
    REQUIRE(record.ok());
    CHECK(record.entry->batch_size == 2);
    CHECK(record.entry->ptx->find(".entry " + record.entry->lowered_name) != std::string::npos);
    REQUIRE(record.entry->resources.has_value());
    CHECK(record.entry->resources->registers > 0);
    CHECK(record.entry->resources->spill_stores == 0);
  }
}
