// jit_silu_mul_templates_test.cpp: the SiLU-and-mul FP8 quant op's kernels (the parent's
// silu_mul_bf16 and the fused twin) compile with NVRTC from the embedded templates through the
// registry, as the runtime declares them (ops::op_kernel_variant), for sm_90 and sm_100, with no
// spills or stack; no GPU needed.
#include <catch2/catch.hpp>
#include <iostream>

#include "jit/compiled_entry.hpp"
#include "jit/compiled_memory_cache.hpp"
#include "metrale/jit/kernel_registry.hpp"
#include "ops/op_kernels.hpp"
#include "ops/silu_mul_fp8_quant/silu_mul_fp8_quant.hpp"
#include "support/jit_test_support.hpp"

using namespace metrale;

TEST_CASE("the SiLU-mul FP8 quant kernels compile with NVRTC for sm_90 and sm_100", "[jit][templates][silu_mul]") {
  jit_test_support::ScopedEnv env("METRALE_TEMPLATE_DIR", std::nullopt);
  SourceSet sources;
  sources.add_embedded_templates();
  KernelRegistry::Options options;
  options.store = {};
  options.memory = std::make_shared<CompiledMemoryCache>();
  options.parallelism = 2;
  KernelRegistry registry(std::move(sources), options);

  const auto parent = ops::op_kernel_variant(ops::kSiluMulParentKernel, KernelParams{ops::kSiluMulBlock, 0, 0});
  const auto twin =
      ops::op_kernel_variant(ops::kSiluMulTwinKernel, KernelParams{0, ops::kSiluMulTwinLanes, ops::kSiluMulTwinGroups});
  const auto twin_wide = ops::op_kernel_variant(ops::kSiluMulTwinKernel, KernelParams{0, 16, 8});
  REQUIRE(parent.has_value());
  REQUIRE(twin.has_value());
  REQUIRE(twin_wide.has_value());
  CHECK(parent->name_expression == "metrale::kernels::silu_mul_bf16<256>");
  CHECK_FALSE(parent->background);
  CHECK(twin->name_expression == "metrale::kernels::silu_mul_per_token_group_quant_fp8<4, 8>");
  CHECK(twin->background);
  CHECK(twin->source == "silu_mul_fp8_quant.cuh");
  const std::vector<VariantId> ids{registry.declare(*parent), registry.declare(*twin), registry.declare(*twin_wide)};
  for (const std::string arch : {"sm_90", "sm_100"}) {
    const auto records = registry.build(arch, ids);
    REQUIRE(records.size() == ids.size());
    for (const BuildRecord& record : records) {
      INFO(arch << " " << record.kernel << " " << record.params.tag() << ":\n"
                << (record.entry ? record.entry->log : std::string("no entry")));
      REQUIRE(record.entry != nullptr);
      REQUIRE(record.ok());
      CHECK(record.entry->ptx->find(".entry " + record.entry->lowered_name) != std::string::npos);
      REQUIRE(record.entry->resources.has_value());
      CHECK(record.entry->resources->spill_stores == 0);
      CHECK(record.entry->resources->spill_loads == 0);
      CHECK(record.entry->resources->stack_bytes == 0);
      std::cout << arch << " " << record.kernel << " " << record.params.tag() << ": "
                << record.entry->resources->registers << " registers\n";
    }
  }
  // Rules: the parent's block is whole warps; the twin takes the FP8 twin's rule.
  CHECK(ops::kernel_params_violation(ops::kSiluMulParentKernel, KernelParams{100, 0, 0}).has_value());
  CHECK(ops::kernel_params_violation(ops::kSiluMulParentKernel, KernelParams{256, 16, 0}).has_value());
  CHECK(ops::kernel_params_violation(ops::kSiluMulTwinKernel, KernelParams{0, 4, 0}).has_value());
  CHECK_FALSE(ops::kernel_params_violation(ops::kSiluMulTwinKernel, KernelParams{0, 8, 16}).has_value());
}
