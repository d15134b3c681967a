// kernels_shipped_host_test.cpp: every (kernel, params) any HARDWARE.toml ships has a builtin
// host instantiation (the METRALE_HOST_KERNEL lines of src/ops/*/*.cuh), so a runtime on the host
// backend runs whatever target it is given, and every builtin is of a shipped variant (or named
// as an exception, with why); and the host backend loads each of them through the registry.
#include <catch2/catch.hpp>
#include <optional>
#include <string>

#include "hardware/hardware_loader.hpp"
#include "host/builtin_kernels.hpp"
#include "host/host_kernel_table.hpp"
#include "metrale/ops/fp8_act_quant.hpp"
#include "metrale/ops/ssm_ba_gates.hpp"
#include "metrale/runtime.hpp"
#include "ops/fp8_act_quant/fp8_act_quant.hpp"
#include "ops/op_kernels.hpp"
#include "ops/ssm_ba_gates/ssm_ba_gates.hpp"
#include "support/isolated_runtime.hpp"

using namespace metrale;

namespace {}  // namespace

TEST_CASE("every shipped kernel variant has a builtin host instantiation", "[kernels][host]") {
  HostKernelTable table;
  register_builtin_host_kernels(table);
  const std::vector<HardwareTarget> targets =
      load_targets(metrale::test::no_environment, metrale::ops::library_catalog());
  REQUIRE(targets.size() >= 5);
  std::size_t shipped = 0;
  for (const HardwareTarget& target : targets) {
    for (const KernelEntry& entry : target.kernels) {
      INFO(target.source << ": " << entry.name << " " << entry.params.tag() << "; builtin: " << table.list());
      CHECK(table.find(entry.name, entry.params) != nullptr);
      ++shipped;
    }
  }
  CHECK(shipped >= 12);  // hopper 4, gb10 3, b200 3, b300 2, generic 2
}

TEST_CASE("every builtin host instantiation is of a variant some target ships", "[kernels][host]") {
  // The other direction: a METRALE_HOST_KERNEL line no target ships (a stale one, after a target
  // dropped its variant) is code the library carries for nothing. A shape-specialised variant
  // (shape != 0, built when an engine pins a shape) counts as its generic variant's.
  HostKernelTable table;
  register_builtin_host_kernels(table);
  const std::vector<HardwareTarget> targets =
      load_targets(metrale::test::no_environment, metrale::ops::library_catalog());
  // The one instantiation no target ships, and why it stays: the FP8 op's default twin params
  // (Fp8QuantKernels::twin_params, kFp8QuantLanes x kFp8QuantGroups), which the typed entry
  // points fall back to and tests/support/reliability_host_ops.hpp loads from this table.
  const KernelParams fp8_default_twin{0, ops::kFp8QuantLanes, ops::kFp8QuantGroups};
  for (const HostKernelInfo& builtin : table.entries()) {
    KernelParams generic = builtin.params;
    generic.shape = 0;
    bool shipped = builtin.kernel == ops::kFp8QuantTwinKernel && builtin.params == fp8_default_twin;
    for (const HardwareTarget& target : targets) {
      for (const KernelEntry& entry : target.kernels) {
        shipped = shipped || (entry.name == builtin.kernel && entry.params == generic);
      }
    }
    INFO(builtin.display_name << " is shipped by no target's [kernels]");
    CHECK(shipped);
  }
  CHECK(table.size() >= 12);
}

TEST_CASE("a host runtime on every target loads every kernel it ships", "[kernels][host]") {
  for (const HardwareTarget& target : load_targets(metrale::test::no_environment, metrale::ops::library_catalog())) {
    auto runtime = Runtime::open(metrale::test::isolated_runtime_options(BackendChoice::kHost, 132, target.name));
    REQUIRE(runtime->has_device());
    for (const KernelEntry& entry : target.kernels) {
      INFO(target.name << ": " << entry.name << " " << entry.params.tag());
      const auto id = runtime->variant_id(entry.name);
      REQUIRE(id.has_value());
      const auto record = runtime->registry().record(*id, "host");
      REQUIRE(record.has_value());
      CHECK(record->ok());
    }
    const ops::BaGatesKernels ba = ops::ba_gates_kernels(*runtime);
    CHECK(ba.parent.present());
    CHECK(ba.twin.present() == (target.find_kernel(ops::kBaGatesTwinKernel) != nullptr));
    const ops::Fp8QuantKernels fp8 = ops::fp8_quant_kernels(*runtime);
    CHECK(fp8.shared.present());
    CHECK(fp8.twin.present() == (target.find_kernel(ops::kFp8QuantTwinKernel) != nullptr));
  }
}
