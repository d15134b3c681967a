// op_flags.cpp: reading an op's scalars and levers from the command line by declared name.
#include "op_flags.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <charconv>

#include "cli_support.hpp"

namespace metrale::cli {
namespace {

std::string scalar_names(const ops::OpDeclaration& op) {
  std::vector<std::string> names;
  for (const ops::ArgDecl& arg : op.args) {
    if (!arg.tensor()) {
      names.push_back(arg.name);
    }
  }
  return fmt::format("{}", fmt::join(names, ", "));
}

std::uint64_t parse_value(const ops::ArgDecl& arg, std::string_view text, std::string_view flag) {
  if (arg.dtype == ops::DType::kFp32) {
    try {
      std::size_t used = 0;
      const float value = std::stof(std::string(text), &used);
      if (used == text.size()) {
        return std::bit_cast<std::uint32_t>(value);
      }
    } catch (const std::exception&) {  // reported below
    }
    throw UsageError(fmt::format("{} {}: expected a decimal number for the fp32 scalar {}", flag, text, arg.name));
  }
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) {
    throw UsageError(fmt::format("{} {}: expected an unsigned integer for {}", flag, text, arg.name));
  }
  return value;
}

void add_scalar(const ops::OpDeclaration& op, std::map<std::string, std::uint64_t>& out, std::string_view name,
                std::string_view text, std::string_view flag) {
  const auto index = op.arg_index(name);
  if (!index || op.args[*index].tensor()) {
    throw UsageError(fmt::format("{}: {} has no scalar '{}' (scalars: {})", flag, op.name, name, scalar_names(op)));
  }
  if (!out.emplace(std::string(name), parse_value(op.args[*index], text, flag)).second) {
    throw UsageError(fmt::format("{}: {} is given twice", flag, name));
  }
}

std::pair<std::string, std::string> split_pair(const std::string& text, std::string_view flag) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw UsageError(fmt::format("{} {}: expected NAME=VALUE", flag, text));
  }
  return {text.substr(0, eq), text.substr(eq + 1)};
}

bool on_off(const std::string& value, std::string_view flag) {
  if (value != "on" && value != "off") {
    throw UsageError(fmt::format("{}: lever value '{}' is neither on nor off", flag, value));
  }
  return value == "on";
}

}  // namespace

std::string flag_of(std::string_view scalar) {
  std::string flag = "--";
  for (const char c : scalar) {
    flag += c == '_' ? '-' : c;
  }
  return flag;
}

void add_op_flags(CLI::App* command, OpFlags& flags, bool levers) {
  command->allow_extras();
  command->add_option("--set", flags.set, "NAME=VALUE: one of the op's scalars (also --NAME VALUE, '_' as '-')");
  if (!levers) {
    return;
  }
  command->add_option("--lever-set", flags.lever_set, "KEY=on|off: force one of the op's levers by [defaults] key");
  command->add_option("--lever", flags.twin_lever, "Force the lever of the op's twin instead of file and environment")
      ->check(CLI::IsMember({"on", "off"}));
  command->add_option("--tensor-core", flags.tensor_core_lever, "Force the lever of the op's tensor-core kernel")
      ->check(CLI::IsMember({"on", "off"}));
}

std::map<std::string, std::uint64_t> given_scalars(const ops::OpDeclaration& op, const OpFlags& flags,
                                                   const std::vector<std::string>& remaining) {
  std::map<std::string, std::uint64_t> out;
  for (const std::string& pair : flags.set) {
    const auto [name, value] = split_pair(pair, "--set");
    add_scalar(op, out, name, value, "--set");
  }
  for (std::size_t i = 0; i < remaining.size(); ++i) {
    const std::string& word = remaining[i];
    if (word.rfind("--", 0) != 0 || word.size() == 2) {
      throw UsageError(fmt::format("unexpected argument '{}' (scalars of {}: {})", word, op.name, scalar_names(op)));
    }
    std::string name = word.substr(2);
    std::string value;
    if (const auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    } else if (i + 1 < remaining.size() && remaining[i + 1].rfind("--", 0) != 0) {
      value = remaining[++i];
    } else {
      value = "1";  // a bare flag
    }
    std::replace(name.begin(), name.end(), '-', '_');
    add_scalar(op, out, name, value, word);
  }
  return out;
}

std::map<std::string, ForcedLever> forced_levers(const ops::OpDeclaration& op, const OpFlags& flags) {
  std::map<std::string, ForcedLever> out;
  const auto force = [&](const std::string& key, bool on, std::string flag) {
    if (!op.lever_index(key)) {
      std::vector<std::string> keys;
      for (const LeverSpec& lever : op.levers) {
        keys.push_back(lever.toml_key);
      }
      throw UsageError(fmt::format("{}: {} has no lever '{}' (levers: {})", flag, op.name, key, fmt::join(keys, ", ")));
    }
    out[key] = ForcedLever{on, std::move(flag)};
  };
  const auto role_lever = [&](std::string_view role, const std::string& value, std::string_view flag) {
    if (value.empty()) {
      return;
    }
    const auto index = op.role_index(role);
    if (!index || op.roles[*index].lever.empty()) {
      throw UsageError(fmt::format("{}: {} has no role '{}' with a lever", flag, op.name, role));
    }
    force(op.roles[*index].lever, value == "on", fmt::format("{} {}", flag, value));
  };
  role_lever("twin", flags.twin_lever, "--lever");
  role_lever("tensor_core", flags.tensor_core_lever, "--tensor-core");
  for (const std::string& pair : flags.lever_set) {
    const auto [key, value] = split_pair(pair, "--lever-set");
    force(key, on_off(value, "--lever-set"), fmt::format("--lever-set {}", pair));
  }
  return out;
}

}  // namespace metrale::cli
