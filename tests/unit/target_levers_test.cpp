// Lever resolution: the [defaults] value, overridden by METRALE_* variables, with provenance;
// through an injected EnvLookup and through the real process environment (restored after).
#include <catch2/catch.hpp>
#include <map>

#include "hardware/hardware_loader.hpp"
#include "hardware/target_selection.hpp"
#include "metrale/target/levers.hpp"
#include "ops/op_kernels.hpp"
#include "support/target_test_support.hpp"

using metrale::Provenance;

namespace {

// The lever table: the text of the variable and the value it must produce, where
// nullopt means "keep the file's value".
struct Spelling {
  std::optional<std::string> env;  // nullopt = unset
  std::optional<bool> expected;
};
const Spelling kSpellings[] = {
    {"0", false}, {"false", false}, {"FALSE", false}, {"off", false},     {"no", false},  {"", {}},
    {"1", true},  {"yes", true},    {"on", true},     {"anything", true}, {"Off", false}, {" no ", false},
    {"  ", {}},   {"0.0", true},    {"nope", true},   {{}, {}},
};

metrale::HardwareTarget target_named(const char* name) {
  const auto targets =
      metrale::load_targets_from_files(metrale::embedded_hardware(), "<embedded>", metrale::ops::library_catalog());
  return *metrale::find_target(targets, name);
}

void check_lever(const metrale::LeverValue& lever, const Spelling& s, bool file_value, const char* env_var,
                 const std::string& source) {
  if (s.expected) {
    CHECK(lever.value == *s.expected);
    CHECK(lever.provenance == Provenance::kEnvironment);
    CHECK(lever.origin == std::string(env_var) + "=" + *s.env);
  } else {
    CHECK(lever.value == file_value);
    CHECK(lever.provenance == Provenance::kFile);
    CHECK(lever.origin == source);
  }
}

}  // namespace

TEST_CASE("lever spellings parse as documented", "[target][levers]") {
  for (const auto& s : kSpellings) {
    if (s.env) {
      INFO('"' << *s.env << '"');
      CHECK(metrale::parse_lever_override(*s.env) == s.expected);
    }
  }
}

TEST_CASE("levers resolve through an injected environment", "[target][levers]") {
  // hopper has both levers on in its file, b300 both off: an override must move both ways.
  for (const char* name : {"hopper", "b300"}) {
    const auto target = target_named(name);
    const bool file_value = target.defaults.at("ssm_ba_gates_hopper");
    for (const auto& s : kSpellings) {
      INFO(name << " env=" << s.env.value_or("(unset)"));
      std::map<std::string, std::string> env;
      if (s.env) {
        env["METRALE_SSM_BA_GATES_HOPPER"] = *s.env;
        env["METRALE_FP8_ACT_QUANT_HOPPER"] = *s.env;
      }
      const auto levers = metrale::resolve_levers(
          target, metrale::ops::library_catalog().levers(), [&](const char* var) -> std::optional<std::string> {
            auto it = env.find(var);
            return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
          });
      check_lever(*levers.find("ssm_ba_gates_hopper"), s, file_value, "METRALE_SSM_BA_GATES_HOPPER", target.source);
      check_lever(*levers.find("fp8_act_quant_hopper"), s, file_value, "METRALE_FP8_ACT_QUANT_HOPPER", target.source);
    }
  }
}

TEST_CASE("the tensor-core lever resolves on its own variable, the other levers untouched", "[target][levers]") {
  // hopper ships it on, generic off: an override must move both ways.
  for (const char* name : {"hopper", "generic"}) {
    const auto target = target_named(name);
    const bool file_value = target.defaults.at("ssm_ba_gates_tensor_core");
    CHECK(file_value == (std::string(name) == "hopper"));
    for (const auto& s : kSpellings) {
      INFO(name << " env=" << s.env.value_or("(unset)"));
      const auto levers = metrale::resolve_levers(
          target, metrale::ops::library_catalog().levers(), [&](const char* var) -> std::optional<std::string> {
            return std::string(var) == "METRALE_SSM_BA_GATES_TENSOR_CORE" ? s.env : std::nullopt;
          });
      check_lever(*levers.find("ssm_ba_gates_tensor_core"), s, file_value, "METRALE_SSM_BA_GATES_TENSOR_CORE",
                  target.source);
      CHECK((*levers.find("ssm_ba_gates_hopper")).provenance == Provenance::kFile);
      CHECK((*levers.find("fp8_act_quant_hopper")).provenance == Provenance::kFile);
    }
  }
}

TEST_CASE("levers resolve through the real process environment, restored after each case", "[target][levers]") {
  const auto target = target_named("gb10");  // ssm on, fp8 off in the file
  for (const auto& s : kSpellings) {
    INFO("env=" << s.env.value_or("(unset)"));
    {
      metrale::test::ScopedEnv ba("METRALE_SSM_BA_GATES_HOPPER", s.env);
      metrale::test::ScopedEnv fp8("METRALE_FP8_ACT_QUANT_HOPPER", s.env);
      const auto levers = metrale::resolve_levers(target, metrale::ops::library_catalog().levers());
      check_lever(*levers.find("ssm_ba_gates_hopper"), s, true, "METRALE_SSM_BA_GATES_HOPPER", target.source);
      check_lever(*levers.find("fp8_act_quant_hopper"), s, false, "METRALE_FP8_ACT_QUANT_HOPPER", target.source);
    }
  }
}

TEST_CASE("the environment guard restores a variable's previous value and absence", "[target][levers]") {
  const char* var = "METRALE_TARGET_TEST_GUARD";
  {
    metrale::test::ScopedEnv outer(var, std::string("before"));
    {
      metrale::test::ScopedEnv inner(var, std::nullopt);
      CHECK(std::getenv(var) == nullptr);
    }
    REQUIRE(std::getenv(var) != nullptr);
    CHECK(std::string(std::getenv(var)) == "before");
  }
  CHECK(std::getenv(var) == nullptr);
}

TEST_CASE("a target without a [defaults] key gets the built-in off, and each lever its own variable",
          "[target][levers]") {
  metrale::HardwareTarget bare;
  bare.name = "bare";
  const auto levers = metrale::resolve_levers(
      bare, metrale::ops::library_catalog().levers(), [](const char* var) -> std::optional<std::string> {
        return std::string(var) == "METRALE_FP8_ACT_QUANT_HOPPER" ? std::optional<std::string>("on") : std::nullopt;
      });
  CHECK_FALSE((*levers.find("ssm_ba_gates_hopper")).value);
  CHECK((*levers.find("ssm_ba_gates_hopper")).provenance == Provenance::kBuiltIn);
  CHECK((*levers.find("fp8_act_quant_hopper")).value);
  CHECK((*levers.find("fp8_act_quant_hopper")).provenance == Provenance::kEnvironment);
  CHECK(metrale::to_string(Provenance::kBuiltIn) == "built-in");
  CHECK(metrale::to_string(Provenance::kFile) == "file");
  CHECK(metrale::to_string(Provenance::kEnvironment) == "environment");
  CHECK(metrale::to_string(Provenance::kOptions) == "options");
  const metrale::KernelCatalog& catalog = metrale::ops::library_catalog();
  REQUIRE(catalog.find_lever("fp8_act_quant_hopper") != nullptr);
  CHECK(catalog.find_lever("fp8_act_quant_hopper")->environment_variable() == "METRALE_FP8_ACT_QUANT_HOPPER");
  CHECK(catalog.find_lever("nope") == nullptr);
  CHECK(levers.find("nope") == nullptr);
  CHECK_FALSE(levers.on("nope"));
}
