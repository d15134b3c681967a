// Malformed HARDWARE.toml files: each error must name the file, the dotted key and the line.
#include <catch2/catch.hpp>
#include <string>

#include "hardware/hardware_loader.hpp"
#include "metrale/error.hpp"
#include "ops/op_kernels.hpp"

namespace {

// A valid hopper file; the line numbers below are the ones the cases expect.
const std::string kValid =
    "[target]\n"                                                       // 1
    "name = \"hopper\"\n"                                              // 2
    "compute_capability = \"9.0\"\n"                                   // 3
    "arch = \"sm_90\"\n"                                               // 4
    "sm_count = 132\n"                                                 // 5
    "\n"                                                               // 6
    "[kernels]\n"                                                      // 7
    "fp8_act_quant = { lanes = 16, groups = 1 }\n"                     // 8
    "fp8_act_quant_hopper = { lanes = 16, groups = 8 }\n"              // 9
    "ssm_ba_gates = { block = 256, lanes = 64 }\n"                     // 10
    "ssm_ba_gates_hopper = { block = 256, lanes = 64, groups = 8 }\n"  // 11
    "\n"                                                               // 12
    "[defaults]\n"                                                     // 13
    "ssm_ba_gates_hopper = true\n"                                     // 14
    "fp8_act_quant_hopper = true\n"                                    // 15
    "ssm_ba_gates_tensor_core = true\n";                               // 16

const std::string kGeneric =
    "[target]\nname = \"generic\"\ncompute_capability = \"any\"\narch = \"device\"\nsm_count = \"device\"\n"
    "[kernels]\nssm_ba_gates = { block = 256, lanes = 64 }\n"
    "[defaults]\nssm_ba_gates_hopper = false\nfp8_act_quant_hopper = false\nssm_ba_gates_tensor_core = false\n";

constexpr const char* kFile = "test/hopper/HARDWARE.toml";

std::string edited(const std::string& from, const std::string& to) {
  std::string text = kValid;
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  text.replace(at, from.size(), to);
  return text;
}

std::string error_of(const std::string& text) {
  try {
    (void)metrale::parse_hardware_toml(text, kFile, metrale::ops::library_catalog());
  } catch (const metrale::ConfigError& e) {
    return e.what();
  }
  FAIL("no ConfigError for:\n" << text);
  return {};
}

struct Case {
  const char* what;
  std::string text;
  const char* key;   // dotted
  int line;          // 0: the error need not carry one
  const char* hint;  // another piece the message must hold
};

}  // namespace

TEST_CASE("the valid fixture parses, so each case below fails for its own edit", "[target][toml]") {
  const auto target = metrale::parse_hardware_toml(kValid, kFile, metrale::ops::library_catalog());
  CHECK(target.name == "hopper");
  CHECK(target.kernels.size() == 4);
  CHECK(target.source == kFile);
}

TEST_CASE("malformed HARDWARE.toml files are refused with file, key and line", "[target][toml]") {
  const Case cases[] = {
      {"unknown key in [target]", edited("sm_count = 132\n", "sm_count = 132\nsm_cout = 3\n"), "target.sm_cout", 6,
       "unknown key"},
      {"unknown top-level table", kValid + "[extra]\nx = 1\n", "extra", 17, "unknown key"},
      {"unknown key in a kernel entry", edited("lanes = 16, groups = 1", "lanes = 16, groups = 1, warps = 2"),
       "kernels.fp8_act_quant.warps", 8, "unknown key"},
      {"sm_count of the wrong type", edited("sm_count = 132", "sm_count = \"132\""), "target.sm_count", 5,
       "expected integer, got string"},
      {"lever of the wrong type", edited("ssm_ba_gates_hopper = true", "ssm_ba_gates_hopper = \"yes\""),
       "defaults.ssm_ba_gates_hopper", 14, "expected boolean"},
      {"kernel parameter of the wrong type", edited("lanes = 16, groups = 8", "lanes = 16.0, groups = 8"),
       "kernels.fp8_act_quant_hopper.lanes", 9, "expected integer, got float"},
      {"kernel entry that is not a table", edited("fp8_act_quant = { lanes = 16, groups = 1 }", "fp8_act_quant = 3"),
       "kernels.fp8_act_quant", 8, "expected table"},
      {"missing arch", edited("arch = \"sm_90\"\n", ""), "target.arch", 1, "missing key"},
      {"missing lever", edited("fp8_act_quant_hopper = true\n", ""), "defaults.fp8_act_quant_hopper", 13,
       "missing key"},
      {"missing [defaults]", kValid.substr(0, kValid.find("[defaults]")), "defaults", 0, "missing key"},
      {"missing kernel parameter", edited("{ block = 256, lanes = 64 }", "{ block = 256 }"),
       "kernels.ssm_ba_gates.lanes", 10, "missing key"},
      {"malformed arch", edited("\"sm_90\"", "\"sm90\""), "target.arch", 4, "sm_90"},
      {"malformed compute capability", edited("\"9.0\"", "\"9\""), "target.compute_capability", 3, "major.minor"},
      {"arch that disagrees with the compute capability", edited("\"sm_90\"", "\"sm_100\""), "target.arch", 4, "sm_90"},
      {"sm_count of zero", edited("sm_count = 132", "sm_count = 0"), "target.sm_count", 5, "[1, 65535]"},
      {"BA lanes other than 64", edited("{ block = 256, lanes = 64 }", "{ block = 256, lanes = 32 }"),
       "kernels.ssm_ba_gates.lanes", 10, "must be 64"},
      {"BA block not a multiple of lanes", edited("block = 256, lanes = 64, groups", "block = 96, lanes = 64, groups"),
       "kernels.ssm_ba_gates_hopper.block", 11, "multiple of lanes"},
      {"BA parent with groups", edited("{ block = 256, lanes = 64 }", "{ block = 256, lanes = 64, groups = 2 }"),
       "kernels.ssm_ba_gates.groups", 10, "absent"},
      {"BA twin groups out of range", edited("lanes = 64, groups = 8", "lanes = 64, groups = 17"),
       "kernels.ssm_ba_gates_hopper.groups", 11, "[1, 16]"},
      {"FP8 parent groups other than 1", edited("lanes = 16, groups = 1", "lanes = 16, groups = 2"),
       "kernels.fp8_act_quant.groups", 8, "must be 1"},
      {"FP8 block given", edited("lanes = 16, groups = 8", "block = 128, lanes = 16, groups = 8"),
       "kernels.fp8_act_quant_hopper.block", 9, "absent"},
      {"FP8 twin groups out of range", edited("lanes = 16, groups = 8", "lanes = 16, groups = 33"),
       "kernels.fp8_act_quant_hopper.groups", 9, "[1, 32]"},
      {"FP8 lanes other than 16, 8 or 4", edited("lanes = 16, groups = 1", "lanes = 32, groups = 1"),
       "kernels.fp8_act_quant.lanes", 8, "must be 16, 8 or 4"},
      {"negative kernel parameter", edited("lanes = 16, groups = 8", "lanes = 16, groups = -8"),
       "kernels.fp8_act_quant_hopper.groups", 9, "positive"},
      {"unknown kernel", edited("[kernels]\n", "[kernels]\nssm_ba_gatez = { block = 256, lanes = 64 }\n"),
       "kernels.ssm_ba_gatez", 8, "unknown kernel"},
      {"twin whose shape differs from its parent's",
       edited("{ block = 256, lanes = 64 }", "{ block = 128, lanes = 64 }"), "kernels.ssm_ba_gates_hopper", 11,
       "kernels.ssm_ba_gates"},
      {"TOML syntax error", edited("sm_count = 132", "sm_count = = 132"), "TOML syntax", 5, ""},
      {"duplicate key", edited("sm_count = 132\n", "sm_count = 132\nsm_count = 133\n"), "TOML syntax", 6, ""},
      {"unknown lever", kValid + "foo_hopper = true\n", "defaults.foo_hopper", 17, "unknown key"},
      {"missing tensor-core lever", edited("ssm_ba_gates_tensor_core = true\n", ""),
       "defaults.ssm_ba_gates_tensor_core", 13, "missing key"},
      {"MMA token tile past 128",
       edited("[kernels]\n", "[kernels]\nssm_ba_gates_mma = { block = 256, lanes = 144, groups = 4 }\n"),
       "kernels.ssm_ba_gates_mma.lanes", 8, "[16, 128]"},
      {"MMA stages past the shared memory",
       edited("[kernels]\n", "[kernels]\nssm_ba_gates_mma = { block = 256, lanes = 128, groups = 7 }\n"),
       "kernels.ssm_ba_gates_mma.groups", 8, "past the 232448"},
      {"[target] as an array", edited("[target]", "[[target]]"), "target", 1, "expected table"},
      {"generic with a real arch", edited("compute_capability = \"9.0\"", "compute_capability = \"any\""),
       "target.arch", 4, "device"},
      {"empty name", edited("name = \"hopper\"", "name = \"\""), "target.name", 2, "empty"},
  };
  for (const auto& c : cases) {
    INFO(c.what);
    const std::string message = error_of(c.text);
    INFO(message);
    CHECK_THAT(message, Catch::StartsWith(kFile));
    if (c.line != 0) {
      CHECK_THAT(message, Catch::StartsWith(std::string(kFile) + ":" + std::to_string(c.line) + ": " + c.key + ": "));
    } else {
      CHECK_THAT(message, Catch::Contains(std::string(": ") + c.key + ": "));
    }
    CHECK_THAT(message, Catch::Contains(c.hint));
  }
}

TEST_CASE("the FP8 twin may split a group over other lanes than its parent, a BA twin may not", "[target][toml]") {
  // The FP8 group's max is exact in any order, so 8 lanes x 16 bf16 writes the bytes 16 x 8 does.
  std::string fp8 = kValid;
  const std::string twin16 = "fp8_act_quant_hopper = { lanes = 16,";
  fp8.replace(fp8.find(twin16), twin16.size(), "fp8_act_quant_hopper = { lanes = 8,");
  const metrale::HardwareTarget target = metrale::parse_hardware_toml(fp8, kFile, metrale::ops::library_catalog());
  const metrale::KernelEntry* twin = target.find_kernel("fp8_act_quant_hopper");
  REQUIRE(twin != nullptr);
  CHECK(twin->params.lanes == 8);
  CHECK(target.find_kernel("fp8_act_quant")->params.lanes == 16);
}

TEST_CASE("generic must take its arch and SM count from the device", "[target][toml]") {
  CHECK(metrale::parse_hardware_toml(kGeneric, "g/HARDWARE.toml", metrale::ops::library_catalog()).arch.empty());
  std::string text = kGeneric;
  text.replace(text.find("sm_count = \"device\""), 19, "sm_count = 132");
  CHECK_THROWS_WITH(metrale::parse_hardware_toml(text, "g/HARDWARE.toml", metrale::ops::library_catalog()),
                    Catch::StartsWith("g/HARDWARE.toml:5: target.sm_count: ") && Catch::Contains("\"device\""));
}

TEST_CASE("cross-file checks name both files", "[target][toml]") {
  auto load = [](std::initializer_list<metrale::EmbeddedFile> files) {
    return metrale::load_targets_from_files(std::span(files.begin(), files.size()), "dir",
                                            metrale::ops::library_catalog());
  };
  std::string second = kValid;
  second.replace(second.find("\"hopper\""), 8, "\"hopper2\"");

  CHECK(load({{"generic/HARDWARE.toml", kGeneric}, {"hopper/HARDWARE.toml", kValid}}).size() == 2);
  CHECK_THROWS_WITH(
      load({{"generic/HARDWARE.toml", kGeneric}, {"hopper/HARDWARE.toml", kValid}, {"hopper2/HARDWARE.toml", second}}),
      Catch::StartsWith("dir/hopper2/HARDWARE.toml:3: target.compute_capability: 9.0") &&
          Catch::Contains("dir/hopper/HARDWARE.toml:3"));
  CHECK_THROWS_WITH(load({{"generic/HARDWARE.toml", kGeneric}, {"h100/HARDWARE.toml", kValid}}),
                    Catch::StartsWith("dir/h100/HARDWARE.toml:2: target.name: ") && Catch::Contains("\"h100\""));
  CHECK_THROWS_WITH(load({{"hopper/HARDWARE.toml", kValid}}),
                    Catch::StartsWith("dir: target.compute_capability: no target is generic"));
  std::string generic2 = kGeneric;
  generic2.replace(generic2.find("\"generic\""), 9, "\"generic2\"");
  CHECK_THROWS_WITH(load({{"generic/HARDWARE.toml", kGeneric}, {"generic2/HARDWARE.toml", generic2}}),
                    Catch::StartsWith("dir/generic2/HARDWARE.toml:3: target.compute_capability: ") &&
                        Catch::Contains("dir/generic/HARDWARE.toml:3"));
  CHECK_THROWS_WITH(load({{"HARDWARE.toml", kGeneric}}),
                    Catch::Contains("dir/HARDWARE.toml") && Catch::Contains("<target>/HARDWARE.toml"));
  CHECK_THROWS_WITH(load({}), Catch::Contains("dir: no <target>/HARDWARE.toml"));
}
