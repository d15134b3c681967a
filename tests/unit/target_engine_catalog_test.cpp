// The kernel catalog as data: an engine's declarations beside the library's, kernels a target
// file declares in full, and the errors (file, line, key) when a name is unknown once the
// catalog is complete or a declaration is malformed.
#include <catch2/catch.hpp>
#include <span>
#include <string>

#include "hardware/hardware_loader.hpp"
#include "hardware/kernel_catalog.hpp"
#include "hardware/variant_expression.hpp"
#include "metrale/error.hpp"
#include "ops/op_kernels.hpp"

namespace {

using metrale::KernelCatalog;
using metrale::KernelDeclaration;
using metrale::KernelParams;

const std::string kHead =
    "[target]\nname = \"hopper\"\ncompute_capability = \"9.0\"\narch = \"sm_90\"\nsm_count = 132\n"  // 1-5
    "[kernels]\n"                                                                                    // 6
    "ssm_ba_gates = { block = 256, lanes = 64 }\n";                                                  // 7
const std::string kTail =
    "[defaults]\nssm_ba_gates_hopper = false\nfp8_act_quant_hopper = false\nssm_ba_gates_tensor_core = false\n";
constexpr const char* kFile = "t/hopper/HARDWARE.toml";

std::string with_kernel(const std::string& line) { return kHead + line + "\n" + kTail; }  // the kernel on line 8

KernelCatalog engine_catalog() {
  KernelCatalog catalog = metrale::ops::library_catalog();
  catalog.add(KernelDeclaration{
      "my_scale", "my_scale.cuh", "engine::my_scale<{block}, {groups}>", {"block", "groups"}, {}, false, false, {}});
  return catalog;
}

std::string error_of(const std::string& text, const KernelCatalog& catalog) {
  try {
    (void)metrale::parse_hardware_toml(text, kFile, catalog);
  } catch (const metrale::ConfigError& e) {
    return e.what();
  }
  FAIL("no ConfigError for:\n" << text);
  return {};
}

}  // namespace

TEST_CASE("a target ships an engine's kernel by the name the engine declared", "[target][catalog][engine]") {
  const std::string text = with_kernel("my_scale = { block = 128, groups = 4 }");
  // The library alone does not know it: the error names the file, the line and the key.
  CHECK_THAT(error_of(text, metrale::ops::library_catalog()),
             Catch::StartsWith(std::string(kFile) + ":8: kernels.my_scale: unknown kernel") &&
                 Catch::Contains("ssm_ba_gates_mma"));
  const KernelCatalog catalog = engine_catalog();
  const metrale::HardwareTarget target = metrale::parse_hardware_toml(text, kFile, catalog);
  const metrale::KernelEntry* entry = target.find_kernel("my_scale");
  REQUIRE(entry != nullptr);
  CHECK(entry->params == KernelParams{128, 0, 4});
  CHECK(entry->line == 8);
  const metrale::KernelVariant variant = metrale::ops::target_kernel_variant(target, *entry, catalog);
  CHECK(variant.source == "my_scale.cuh");
  CHECK(variant.name_expression == "engine::my_scale<128, 4>");
  // The engine's declared parameters are checked like the library's.
  CHECK_THAT(error_of(with_kernel("my_scale = { block = 128 }"), catalog),
             Catch::StartsWith(std::string(kFile) + ":8: kernels.my_scale.groups: missing key"));
  CHECK_THAT(error_of(with_kernel("my_scale = { block = 128, groups = 4, lanes = 2 }"), catalog),
             Catch::StartsWith(std::string(kFile) + ":8: kernels.my_scale.lanes: lanes = 2: must be absent"));
}

TEST_CASE("a target file may declare a kernel in full", "[target][catalog][engine]") {
  const std::string full =
      "my_kernel = { block = 128, source = \"my_kernel.cuh\", expression = \"engine::my_kernel<{block}>\" }";
  const metrale::HardwareTarget target =
      metrale::parse_hardware_toml(with_kernel(full), kFile, metrale::ops::library_catalog());
  const metrale::KernelEntry* entry = target.find_kernel("my_kernel");
  REQUIRE(entry != nullptr);
  CHECK(entry->source == "my_kernel.cuh");
  const auto variant = metrale::ops::target_kernel_variant(target, *entry, metrale::ops::library_catalog());
  CHECK(variant.name_expression == "engine::my_kernel<128>");
  CHECK(variant.source == "my_kernel.cuh");

  struct Bad {
    std::string line;
    const char* prefix;
    const char* hint;
  };
  const Bad bad[] = {
      {"my_kernel = { block = 128, source = \"k.cuh\" }", ":8: kernels.my_kernel.expression: missing key", "both"},
      {"my_kernel = { block = 128, expression = \"k<{block}>\" }", ":8: kernels.my_kernel.source: missing key", "both"},
      {"my_kernel = { block = 128, source = \"k.cuh\", expression = \"k<{warps}>\" }",
       ":8: kernels.my_kernel.expression: ", "unknown placeholder {warps}"},
      {"my_kernel = { block = 128, source = \"k.cuh\", expression = \"k<{block}, {lanes}>\" }",
       ":8: kernels.my_kernel: ", "uses {lanes}, which is not one of its parameters"},
      {"my_kernel = { block = 128, source = 3, expression = \"k<{block}>\" }",
       ":8: kernels.my_kernel.source: ", "expected string"},
      // A full declaration may not redefine a library kernel.
      {"ssm_ba_gates_mma = { block = 256, lanes = 64, source = \"x.cuh\", expression = \"x<{block}, {lanes}>\" }",
       ":8: kernels.ssm_ba_gates_mma: ", "already declared"},
  };
  for (const Bad& b : bad) {
    INFO(b.line);
    const std::string message = error_of(with_kernel(b.line), metrale::ops::library_catalog());
    CHECK_THAT(message, Catch::StartsWith(std::string(kFile) + b.prefix) && Catch::Contains(b.hint));
  }
}

TEST_CASE("names are checked once every file's declarations are in", "[target][catalog][engine]") {
  const std::string generic =
      "[target]\nname = \"generic\"\ncompute_capability = \"any\"\narch = \"device\"\nsm_count = \"device\"\n"
      "[kernels]\nmy_kernel = { block = 64 }\n" +
      kTail;
  const std::string declaring = with_kernel(
      "my_kernel = { block = 128, source = \"my_kernel.cuh\", expression = \"engine::my_kernel<{block}>\" }");
  const metrale::EmbeddedFile files[] = {{"generic/HARDWARE.toml", generic}, {"hopper/HARDWARE.toml", declaring}};
  const auto targets = metrale::load_targets_from_files(files, "dir", metrale::ops::library_catalog());
  REQUIRE(targets.size() == 2);
  const auto variant =
      metrale::ops::target_kernel_variant(targets[0], *targets[0].find_kernel("my_kernel"),
                                          metrale::complete_catalog(metrale::ops::library_catalog(), targets));
  CHECK(variant.name_expression == "engine::my_kernel<64>");
  // Without the declaring file the name is unknown, and the error names the file that uses it.
  const metrale::EmbeddedFile alone[] = {{"generic/HARDWARE.toml", generic}};
  CHECK_THROWS_WITH(metrale::load_targets_from_files(alone, "dir", metrale::ops::library_catalog()),
                    Catch::StartsWith("dir/generic/HARDWARE.toml:7: kernels.my_kernel: unknown kernel"));
}

TEST_CASE("catalog declarations are checked when added", "[target][catalog][engine]") {
  KernelCatalog catalog;
  CHECK_THROWS_WITH(catalog.add({"k", "", "k<{block}>", {"block"}, {}, false, false, {}}),
                    Catch::Contains("needs a kernel name, a source and an expression"));
  CHECK_THROWS_WITH(catalog.add({"k", "k.cuh", "k<{block}>", {"block", "warps"}, {}, false, false, {}}),
                    Catch::Contains("unknown parameter 'warps'"));
  CHECK_THROWS_WITH(catalog.add({"k", "k.cuh", "k<{block}, {lanes}>", {"block"}, {}, false, false, {}}),
                    Catch::Contains("uses {lanes}"));
  CHECK_THROWS_WITH(catalog.add({"k", "k.cuh", "k<{block>", {"block"}, {}, false, false, {}}),
                    Catch::Contains("never closed"));
  catalog.add({"k", "k.cuh", "k<{block}>", {"block"}, {}, false, true, {}});
  catalog.add({"k", "k.cuh", "k<{block}>", {"block"}, {}, false, true, {}});  // the same again: accepted
  CHECK(catalog.names() == std::vector<std::string>{"k"});
  CHECK_THROWS_WITH(catalog.add({"k", "other.cuh", "k<{block}>", {"block"}, {}, false, false, {}}),
                    Catch::Contains("already declared with source 'k.cuh'"));
  const metrale::KernelVariant variant = catalog.variant("k", {96, 0, 0});
  CHECK(variant.name_expression == "k<96>");
  CHECK(variant.background);
  CHECK_THROWS_AS(catalog.variant("nope", {}), metrale::ArgumentError);
  CHECK(metrale::expand_kernel_expression("a<{groups}, {lanes}, {block}>", {1, 2, 3}) == "a<3, 2, 1>");
  CHECK_THROWS_WITH(metrale::expand_kernel_expression("a<{x}>", {}), Catch::Contains("unknown placeholder {x}"));
}

TEST_CASE("registry variant expressions fill only the parameters the variant takes", "[target][catalog][engine]") {
  // The C ABI's declare (and so Python's) fills these as the library's kernels are filled.
  CHECK(metrale::expand_variant_expression("a<{block}, {lanes}, {groups}>", {128, 4, 2}) == "a<128, 4, 2>");
  CHECK(metrale::expand_variant_expression("a<{block}>", {64, 0, 0}) == "a<64>");
  CHECK(metrale::expand_variant_expression("a<7>", {}) == "a<7>");
  CHECK(metrale::expand_variant_expression("a<{block}>", {64, 0, 0}) ==
        metrale::expand_kernel_expression("a<{block}>", {64, 0, 0}));
  CHECK_THROWS_WITH(metrale::expand_variant_expression("a<{lanes}>", {64, 0, 0}),
                    Catch::Contains("uses {lanes}, but the variant's lanes is 0"));
  CHECK_THROWS_WITH(metrale::expand_variant_expression("a<{shape}>", {64, 0, 0}),
                    Catch::Contains("unknown placeholder {shape} (allowed: {block}, {lanes}, {groups})"));
  CHECK_THROWS_WITH(metrale::expand_variant_expression("a<{warps}>", {64, 0, 0}),
                    Catch::Contains("unknown placeholder {warps}"));
  CHECK_THROWS_WITH(metrale::expand_variant_expression("a<{block>", {64, 0, 0}), Catch::Contains("never closed"));
}
