// levers.cpp: resolving the levers from a target's [defaults] and the environment.
#include "metrale/target/levers.hpp"

#include <algorithm>
#include <array>
#include <cctype>

namespace metrale {
namespace {

std::string_view trim_blanks(std::string_view text) {
  auto is_blank = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!text.empty() && is_blank(text.front())) {
    text.remove_prefix(1);
  }
  while (!text.empty() && is_blank(text.back())) {
    text.remove_suffix(1);
  }
  return text;
}

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  });
}

}  // namespace

std::string_view to_string(Provenance provenance) {
  switch (provenance) {
    case Provenance::kBuiltIn:
      return "built-in";
    case Provenance::kFile:
      return "file";
    case Provenance::kEnvironment:
      return "environment";
  }
  return "unknown";
}

const LeverSpec* find_lever(std::string_view toml_key) {
  auto it = std::find_if(kLeverSpecs.begin(), kLeverSpecs.end(),
                         [&](const LeverSpec& spec) { return spec.toml_key == toml_key; });
  return it == kLeverSpecs.end() ? nullptr : &*it;
}

std::optional<bool> parse_lever_override(std::string_view text) {
  const std::string_view value = trim_blanks(text);
  if (value.empty()) {
    return std::nullopt;
  }
  static constexpr std::array<std::string_view, 4> kOff{"0", "false", "off", "no"};
  const bool off =
      std::any_of(kOff.begin(), kOff.end(), [&](std::string_view word) { return equals_ignoring_case(value, word); });
  return !off;
}

Levers resolve_levers(const HardwareTarget& target, const EnvLookup& env) {
  Levers levers;
  for (const auto& spec : kLeverSpecs) {
    LeverValue& lever = levers.*spec.field;
    if (auto it = target.defaults.find(spec.toml_key); it != target.defaults.end()) {
      lever = LeverValue{it->second, Provenance::kFile, target.source};
    } else {
      lever = LeverValue{false, Provenance::kBuiltIn, "built-in"};
    }
    if (auto text = env(spec.env_var)) {
      if (auto value = parse_lever_override(*text)) {
        lever = LeverValue{*value, Provenance::kEnvironment, std::string(spec.env_var) + "=" + *text};
      }
    }
  }
  return levers;
}

}  // namespace metrale
