// levers.cpp: resolving the levers from a target's [defaults] and the environment.
#include "metrale/target/levers.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

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
    case Provenance::kOptions:
      return "options";
  }
  return "unknown";
}

std::string LeverSpec::environment_variable() const {
  if (!env_var.empty()) {
    return env_var;
  }
  std::string name = "METRALE_";
  for (char c : toml_key) {
    name += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return name;
}

const LeverValue* Levers::find(std::string_view toml_key) const {
  auto it = std::find_if(entries_.begin(), entries_.end(),
                         [&](const Entry& entry) { return entry.spec.toml_key == toml_key; });
  return it == entries_.end() ? nullptr : &it->value;
}

LeverValue* Levers::find(std::string_view toml_key) {
  return const_cast<LeverValue*>(std::as_const(*this).find(toml_key));
}

bool Levers::on(std::string_view toml_key) const {
  const LeverValue* lever = find(toml_key);
  return lever != nullptr && lever->value;
}

void Levers::add(LeverSpec spec, LeverValue value) {
  if (LeverValue* known = find(spec.toml_key)) {
    *known = std::move(value);  // an op naming a lever another op declared shares it
    return;
  }
  entries_.push_back(Entry{std::move(spec), std::move(value)});
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

Levers resolve_levers(const HardwareTarget& target, std::span<const LeverSpec> specs, const EnvLookup& env) {
  Levers levers;
  for (const LeverSpec& spec : specs) {
    LeverValue lever{false, Provenance::kBuiltIn, "built-in"};
    if (auto it = target.defaults.find(spec.toml_key); it != target.defaults.end()) {
      lever = LeverValue{it->second, Provenance::kFile, target.source};
    }
    const std::string variable = spec.environment_variable();
    if (auto text = env(variable.c_str())) {
      if (auto value = parse_lever_override(*text)) {
        lever = LeverValue{*value, Provenance::kEnvironment, variable + "=" + *text};
      }
    }
    levers.add(spec, std::move(lever));
  }
  return levers;
}

}  // namespace metrale
