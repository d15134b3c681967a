// metrale/target/levers.hpp: the levers that request the Hopper twins and the tensor-core BA
// kernel, with where each value came from.
// Invariant: a lever is the target's [defaults] value unless its environment variable is
// set to a non-empty value; 0, false, off, no (any case, surrounding blanks ignored) turn it
// off and every other non-empty value turns it on.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "metrale/environment.hpp"
#include "metrale/target/hardware_target.hpp"

namespace metrale {

enum class Provenance { kBuiltIn, kFile, kEnvironment };

// "built-in", "file", "environment".
std::string_view to_string(Provenance provenance);

struct LeverValue {
  bool value = false;
  Provenance provenance = Provenance::kBuiltIn;
  // The file path, "METRALE_SSM_BA_GATES_HOPPER=off", or "built-in" for a target without
  // the key.
  std::string origin;
};

struct Levers {
  LeverValue ssm_ba_gates_hopper;
  LeverValue fp8_act_quant_hopper;
  LeverValue ssm_ba_gates_tensor_core;
};

// One lever: its [defaults] key, its environment variable and where Levers keeps it.
struct LeverSpec {
  std::string_view toml_key;
  const char* env_var;
  LeverValue Levers::*field;
};

inline constexpr std::array<LeverSpec, 3> kLeverSpecs{{
    {"ssm_ba_gates_hopper", "METRALE_SSM_BA_GATES_HOPPER", &Levers::ssm_ba_gates_hopper},
    {"fp8_act_quant_hopper", "METRALE_FP8_ACT_QUANT_HOPPER", &Levers::fp8_act_quant_hopper},
    {"ssm_ba_gates_tensor_core", "METRALE_SSM_BA_GATES_TENSOR_CORE", &Levers::ssm_ba_gates_tensor_core},
}};

// The lever spec for a [defaults] key, or nullptr.
const LeverSpec* find_lever(std::string_view toml_key);

// nullopt for empty (or blank) text: keep the file's value. Pure.
std::optional<bool> parse_lever_override(std::string_view text);

Levers resolve_levers(const HardwareTarget& target, const EnvLookup& env = process_environment());

}  // namespace metrale
