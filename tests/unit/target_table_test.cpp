// Every cell of DESIGN.md's target table, read from the files embedded in the library.
#include <catch2/catch.hpp>

#include "hardware/hardware_loader.hpp"
#include "hardware/kernel_catalog.hpp"
#include "hardware/target_selection.hpp"
#include "metrale/target/levers.hpp"
#include "ops/op_kernels.hpp"
#include "ops/ssm_ba_gates/ssm_ba_gates.hpp"

namespace {

struct Row {
  const char* name;
  const char* cc;  // "" = generic
  const char* arch;
  std::uint32_t sm_count;  // 0 = from the device
  bool ba_twin;
  bool fp8_twin;
  bool ba_lever;
  bool fp8_lever;
  bool tensor_core;          // ssm_ba_gates_mma shipped and its lever on
  std::uint32_t mma_tokens;  // its token tile
  std::uint32_t mma_stages;  // its K stages: as many as fit the device's shared memory at N = 128
};

constexpr Row kDesignTable[] = {
    {"hopper", "9.0", "sm_90", 132, true, true, true, true, true, 128, 6},
    {"gb10", "12.1", "sm_121", 48, true, false, true, false, true, 64, 3},
    {"b200", "10.0", "sm_100", 148, true, false, false, false, true, 128, 6},
    {"b300", "10.3", "sm_103", 148, false, false, false, false, true, 128, 6},
    {"generic", "", "", 0, false, false, false, false, false, 0, 0},
};

std::optional<std::string> no_env(const char* /*name*/) { return std::nullopt; }

}  // namespace

TEST_CASE("the shipped targets match DESIGN.md's table cell by cell", "[target]") {
  const auto targets =
      metrale::load_targets_from_files(metrale::embedded_hardware(), "<embedded>", metrale::ops::library_catalog());
  REQUIRE(targets.size() == std::size(kDesignTable));
  for (const Row& row : kDesignTable) {
    INFO(row.name);
    const auto* target = metrale::find_target(targets, row.name);
    REQUIRE(target != nullptr);
    CHECK(target->source == std::string("<embedded>/") + row.name + "/HARDWARE.toml");
    if (*row.cc == '\0') {
      CHECK_FALSE(target->compute_capability.has_value());
      CHECK_FALSE(target->sm_count.has_value());
    } else {
      REQUIRE(target->compute_capability.has_value());
      CHECK(target->compute_capability->str() == row.cc);
      REQUIRE(target->sm_count.has_value());
      CHECK(*target->sm_count == row.sm_count);
    }
    CHECK(target->arch == row.arch);

    // Parents ship everywhere, with the catalog's shapes; twins only where the table says.
    const auto* ba = target->find_kernel(metrale::kSsmBaGates);
    const auto* fp8 = target->find_kernel(metrale::kFp8ActQuant);
    REQUIRE(ba != nullptr);
    REQUIRE(fp8 != nullptr);
    CHECK(ba->params == metrale::KernelParams{256, 64, 0});
    CHECK(fp8->params == metrale::KernelParams{0, 16, 1});
    const auto* ba_twin = target->find_kernel(metrale::kSsmBaGatesHopper);
    const auto* fp8_twin = target->find_kernel(metrale::kFp8ActQuantHopper);
    CHECK((ba_twin != nullptr) == row.ba_twin);
    CHECK((fp8_twin != nullptr) == row.fp8_twin);
    if (ba_twin != nullptr) {
      CHECK(ba_twin->params == metrale::KernelParams{256, 64, 8});
    }
    if (fp8_twin != nullptr) {
      // 4 lanes x 4 vectors per group: 93 % of the copy ceiling on the H200, 16 x 1 74 % (BENCHMARKS.md)
      CHECK(fp8_twin->params == metrale::KernelParams{0, 4, 8});
    }
    const auto* mma = target->find_kernel(metrale::kSsmBaGatesMma);
    CHECK((mma != nullptr) == row.tensor_core);
    if (mma != nullptr) {
      CHECK(mma->params == metrale::KernelParams{256, row.mma_tokens, row.mma_stages});
      // The ring fits the target's devices at the widest N, and one more stage would not.
      REQUIRE(target->compute_capability.has_value());
      const std::uint64_t limit = metrale::opt_in_shared_bytes(*target->compute_capability);
      CHECK(metrale::ops::ba_gates_mma_shared_bytes(row.mma_tokens, 128, row.mma_stages) <= limit);
      CHECK(metrale::ops::ba_gates_mma_shared_bytes(row.mma_tokens, 128, row.mma_stages + 1) > limit);
    }
    CHECK(std::is_sorted(target->kernels.begin(), target->kernels.end(),
                         [](const auto& a, const auto& b) { return a.name < b.name; }));

    const auto levers = metrale::resolve_levers(*target, metrale::ops::library_catalog().levers(), no_env);
    CHECK((*levers.find("ssm_ba_gates_hopper")).value == row.ba_lever);
    CHECK((*levers.find("fp8_act_quant_hopper")).value == row.fp8_lever);
    CHECK((*levers.find("ssm_ba_gates_tensor_core")).value == row.tensor_core);
    CHECK((*levers.find("ssm_ba_gates_hopper")).provenance == metrale::Provenance::kFile);
    CHECK((*levers.find("fp8_act_quant_hopper")).origin == target->source);
  }
}

TEST_CASE("the hardware/ folder on disk and the embedded copy agree", "[target]") {
  const auto embedded =
      metrale::load_targets_from_files(metrale::embedded_hardware(), "<embedded>", metrale::ops::library_catalog());
  const auto on_disk =
      metrale::load_targets_from_dir(std::string(METRALE_SOURCE_DIR) + "/hardware", metrale::ops::library_catalog());
  REQUIRE(on_disk.size() == embedded.size());
  for (std::size_t i = 0; i < embedded.size(); ++i) {
    INFO(embedded[i].name);
    CHECK(on_disk[i].name == embedded[i].name);
    CHECK(on_disk[i].compute_capability == embedded[i].compute_capability);
    CHECK(on_disk[i].arch == embedded[i].arch);
    CHECK(on_disk[i].sm_count == embedded[i].sm_count);
    CHECK(on_disk[i].defaults == embedded[i].defaults);
    REQUIRE(on_disk[i].kernels.size() == embedded[i].kernels.size());
    for (std::size_t k = 0; k < embedded[i].kernels.size(); ++k) {
      CHECK(on_disk[i].kernels[k].name == embedded[i].kernels[k].name);
      CHECK(on_disk[i].kernels[k].params == embedded[i].kernels[k].params);
    }
  }
}
