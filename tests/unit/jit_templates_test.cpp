// jit_templates_test.cpp: every kernel variant every target ships compiles with NVRTC from the
// embedded templates for that target's arch (generic at sm_89, standing for a device no other
// target claims), with 0 spill stores, 0 spill loads and 0 stack; no GPU needed. The variants
// are declared the way the runtime declares them (ops::declare_target_kernels, which spells
// name expressions through ops::op_kernel_variant), and the resource table is printed.
#include <catch2/catch.hpp>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include "hardware/hardware_loader.hpp"
#include "jit/compiled_entry.hpp"
#include "jit/compiled_memory_cache.hpp"
#include "metrale/jit/kernel_registry.hpp"
#include "ops/op_kernels.hpp"
#include "support/jit_test_support.hpp"

using namespace metrale;

namespace {

std::optional<std::string> no_environment(const char*) { return std::nullopt; }

// The arch a target's kernels compile for here: its own, or sm_89 for generic.
std::string arch_of(const HardwareTarget& target) { return target.arch.empty() ? "sm_89" : target.arch; }

}  // namespace

TEST_CASE("every shipped kernel variant compiles for its target's arch with no spills or stack", "[jit][templates]") {
  jit_test_support::ScopedEnv env("METRALE_TEMPLATE_DIR", std::nullopt);
  SourceSet sources;
  sources.add_embedded_templates();
  KernelRegistry::Options options;
  options.store = {};
  options.memory = std::make_shared<CompiledMemoryCache>();
  options.parallelism = 2;
  KernelRegistry registry(std::move(sources), options);

  std::ostringstream table;
  table << std::left << std::setw(22) << "kernel" << std::setw(11) << "params" << std::setw(8) << "arch" << std::right
        << std::setw(6) << "regs" << std::setw(10) << "spill_st" << std::setw(10) << "spill_ld" << std::setw(7)
        << "smem" << std::setw(7) << "stack"
        << "\n";
  std::size_t compiled = 0;
  for (const HardwareTarget& target : load_targets(no_environment, metrale::ops::library_catalog())) {
    const auto ids = ops::declare_target_kernels(registry, target);
    REQUIRE(ids.size() == target.kernels.size());
    std::vector<VariantId> wanted;
    std::map<std::string, std::size_t> per_source;
    for (const auto& [kernel, id] : ids) {
      wanted.push_back(id);
      ++per_source[registry.variant(id).source];
    }
    const std::string arch = arch_of(target);
    const auto records = registry.build(arch, wanted);
    REQUIRE(records.size() == wanted.size());
    for (const BuildRecord& record : records) {
      INFO(target.name << " " << arch << " " << record.kernel << " " << record.params.tag() << ":\n"
                       << (record.entry ? record.entry->log : std::string("no entry")));
      REQUIRE(record.entry != nullptr);
      REQUIRE(record.ok());
      // The variants of one template share one NVRTC program (or come from the memory cache,
      // which keeps the program's batch size).
      CHECK(record.entry->batch_size == per_source[registry.variant(record.id).source]);
      CHECK(record.entry->ptx->find(".entry " + record.entry->lowered_name) != std::string::npos);
      REQUIRE(record.entry->resources.has_value());
      const KernelResources& r = *record.entry->resources;
      CHECK(r.registers > 0);
      CHECK(r.spill_stores == 0);
      CHECK(r.spill_loads == 0);
      CHECK(r.stack_bytes == 0);
      table << std::left << std::setw(22) << record.kernel << std::setw(11) << record.params.tag() << std::setw(8)
            << arch << std::right << std::setw(6) << r.registers << std::setw(10) << r.spill_stores << std::setw(10)
            << r.spill_loads << std::setw(7) << r.shared_bytes << std::setw(7) << r.stack_bytes << "\n";
      ++compiled;
    }
  }
  CHECK(compiled >= 12);
  CHECK(registry.stats().nvrtc_compiles == compiled);  // compiled here, not found in a cache
  std::cout << "NVRTC resources of every shipped variant:\n" << table.str() << std::flush;
}

TEST_CASE("op_kernel_variant spells the kernels' name expressions and refuses unknown kernels", "[jit][templates]") {
  const auto twin = ops::op_kernel_variant("ssm_ba_gates_hopper", KernelParams{256, 64, 8});
  REQUIRE(twin.has_value());
  CHECK(twin->name_expression == "metrale::kernels::dense_gemm_ba_gates_prefill_hopper<256, 64, 8>");
  CHECK(twin->source == "ssm_ba_gates.cuh");
  CHECK(twin->background);
  const auto shared = ops::op_kernel_variant("fp8_act_quant", KernelParams{0, 16, 1});
  REQUIRE(shared.has_value());
  CHECK(shared->name_expression == "metrale::kernels::per_token_group_quant_fp8<16, 1>");
  CHECK_FALSE(shared->background);
  CHECK_FALSE(ops::op_kernel_variant("no_such_kernel", KernelParams{256, 64, 0}).has_value());
}
