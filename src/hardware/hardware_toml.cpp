// hardware_toml.cpp: one HARDWARE.toml text -> a validated HardwareTarget.
// Invariant: every key is known, present and of its type, or a ConfigError reads
// "<file>:<line>: <dotted.key>: <what is wrong>" (the line left out where toml++ has none).
#include "hardware_toml.hpp"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>

#include "metrale/error.hpp"
#include "metrale/target/levers.hpp"

namespace metrale::detail {
namespace {

// compute_capability / arch / sm_count spellings of the generic target (see
// hardware/generic/HARDWARE.toml).
constexpr std::string_view kAnyDevice = "any";
constexpr std::string_view kFromDevice = "device";
constexpr std::int64_t kMaxSmCount = 65535;

std::string_view type_name(toml::node_type type) {
  switch (type) {
    case toml::node_type::table:
      return "table";
    case toml::node_type::array:
      return "array";
    case toml::node_type::string:
      return "string";
    case toml::node_type::integer:
      return "integer";
    case toml::node_type::floating_point:
      return "float";
    case toml::node_type::boolean:
      return "boolean";
    case toml::node_type::date:
      return "date";
    case toml::node_type::time:
      return "time";
    case toml::node_type::date_time:
      return "date-time";
    case toml::node_type::none:
      break;
  }
  return "nothing";
}

class FileChecker {
 public:
  explicit FileChecker(std::string_view source) : source_(source) {}

  void set_root(const toml::table& root) { root_ = &root; }

  [[noreturn]] void fail(std::uint32_t line, std::string_view key, std::string_view reason) const {
    if (line != 0) {
      throw ConfigError(fmt::format("{}:{}: {}: {}", source_, line, key, reason));
    }
    throw ConfigError(fmt::format("{}: {}: {}", source_, key, reason));
  }

  // The table at `key` of `parent`, which must exist; `allowed` are its only keys.
  const toml::table& table(const toml::table& parent, std::string_view key, std::string_view dotted) const {
    const toml::node& node = require(parent, key, dotted);
    const auto* found = node.as_table();
    if (found == nullptr) {
      wrong_type(node, dotted, "table");
    }
    return *found;
  }

  void only_keys(const toml::table& table, std::string_view prefix, std::span<const std::string_view> allowed) const {
    for (auto&& [key, node] : table) {
      if (std::find(allowed.begin(), allowed.end(), key.str()) == allowed.end()) {
        fail(key.source().begin.line, dotted(prefix, key.str()),
             fmt::format("unknown key (allowed: {})", fmt::join(allowed, ", ")));
      }
    }
  }

  const toml::node& require(const toml::table& parent, std::string_view key, std::string_view dotted_key) const {
    const toml::node* node = parent.get(key);
    if (node == nullptr) {
      // The line of the table that lacks the key; the document itself has none worth naming.
      fail(&parent == root_ ? 0 : parent.source().begin.line, dotted_key, "missing key");
    }
    return *node;
  }

  std::string string(const toml::table& parent, std::string_view key, std::string_view dotted_key) const {
    const toml::node& node = require(parent, key, dotted_key);
    const auto* value = node.as_string();
    if (value == nullptr) {
      wrong_type(node, dotted_key, "string");
    }
    return value->get();
  }

  [[noreturn]] void wrong_type(const toml::node& node, std::string_view dotted_key, std::string_view expected) const {
    fail(node.source().begin.line, dotted_key,
         fmt::format("wrong type: expected {}, got {}", expected, type_name(node.type())));
  }

  static std::string dotted(std::string_view prefix, std::string_view key) {
    return prefix.empty() ? std::string(key) : fmt::format("{}.{}", prefix, key);
  }

 private:
  std::string_view source_;
  const toml::table* root_ = nullptr;
};

void read_target_table(const FileChecker& check, const toml::table& root, ParsedHardware& out) {
  static constexpr std::array<std::string_view, 4> kKeys{"name", "compute_capability", "arch", "sm_count"};
  const toml::table& table = check.table(root, "target", "target");
  check.only_keys(table, "target", kKeys);
  HardwareTarget& target = out.target;

  target.name = check.string(table, "name", "target.name");
  out.name_line = table.get("name")->source().begin.line;
  if (target.name.empty()) {
    check.fail(out.name_line, "target.name", "must not be empty");
  }

  const std::string cc = check.string(table, "compute_capability", "target.compute_capability");
  out.compute_capability_line = table.get("compute_capability")->source().begin.line;
  if (cc != kAnyDevice) {
    target.compute_capability = parse_compute_capability(cc);
    if (!target.compute_capability) {
      check.fail(out.compute_capability_line, "target.compute_capability",
                 fmt::format("\"{}\" is neither \"major.minor\" (e.g. \"9.0\") nor \"{}\"", cc, kAnyDevice));
    }
  }
  const bool generic = !target.compute_capability;

  const std::string arch = check.string(table, "arch", "target.arch");
  const std::uint32_t arch_line = table.get("arch")->source().begin.line;
  if (generic) {
    if (arch != kFromDevice) {
      check.fail(arch_line, "target.arch",
                 fmt::format("\"{}\": must be \"{}\" for the generic target (compute_capability = \"{}\")", arch,
                             kFromDevice, kAnyDevice));
    }
  } else if (arch != target.compute_capability->sm_arch()) {
    check.fail(arch_line, "target.arch",
               fmt::format("\"{}\": must be \"{}\" (sm_ and the digits of compute_capability {})", arch,
                           target.compute_capability->sm_arch(), cc));
  } else {
    target.arch = arch;
  }

  const toml::node& sm_count = check.require(table, "sm_count", "target.sm_count");
  if (generic) {
    const auto* text = sm_count.as_string();
    if (text == nullptr || text->get() != kFromDevice) {
      check.fail(
          sm_count.source().begin.line, "target.sm_count",
          fmt::format("must be \"{}\" for the generic target (compute_capability = \"{}\")", kFromDevice, kAnyDevice));
    }
  } else {
    const auto* count = sm_count.as_integer();
    if (count == nullptr) {
      check.wrong_type(sm_count, "target.sm_count", "integer");
    }
    if (count->get() < 1 || count->get() > kMaxSmCount) {
      check.fail(sm_count.source().begin.line, "target.sm_count",
                 fmt::format("{} is outside [1, {}]", count->get(), kMaxSmCount));
    }
    target.sm_count = static_cast<std::uint32_t>(count->get());
  }
}

std::uint32_t read_kernel_param(const FileChecker& check, const toml::node& node, std::string_view dotted_key) {
  const auto* value = node.as_integer();
  if (value == nullptr) {
    check.wrong_type(node, dotted_key, "integer");
  }
  if (value->get() < 1 || value->get() > std::numeric_limits<std::uint32_t>::max()) {
    check.fail(node.source().begin.line, dotted_key, fmt::format("{} is not a positive 32-bit integer", value->get()));
  }
  return static_cast<std::uint32_t>(value->get());
}

// One [kernels] entry: its parameters, and for a kernel declared in full its source and name
// expression. Whether the name is known and the parameters fit is the catalog's check, made
// once every declaration is in (target/kernel_catalog.hpp).
KernelEntry read_kernel(const FileChecker& check, std::string_view name, const toml::node& node) {
  static constexpr std::array<std::string_view, 3> kParams{"block", "lanes", "groups"};
  static constexpr std::array<std::string_view, 5> kKeys{"block", "lanes", "groups", "source", "expression"};
  const std::string prefix = FileChecker::dotted("kernels", name);
  const auto* table = node.as_table();
  if (table == nullptr) {
    check.wrong_type(node, prefix, "table of block/lanes/groups");
  }
  check.only_keys(*table, prefix, kKeys);
  KernelEntry entry{std::string(name), {}, {}, {}, node.source().begin.line};
  std::array<std::uint32_t*, 3> fields{&entry.params.block, &entry.params.lanes, &entry.params.groups};
  for (std::size_t i = 0; i < kParams.size(); ++i) {
    if (const toml::node* param = table->get(kParams[i])) {
      *fields[i] = read_kernel_param(check, *param, FileChecker::dotted(prefix, kParams[i]));
    }
  }
  const bool has_source = table->get("source") != nullptr;
  const bool has_expression = table->get("expression") != nullptr;
  if (has_source != has_expression) {
    check.fail(entry.line, FileChecker::dotted(prefix, has_source ? "expression" : "source"),
               "missing key; a kernel declared in full needs both source and expression");
  }
  if (has_source) {
    entry.source = check.string(*table, "source", FileChecker::dotted(prefix, "source"));
    entry.expression = check.string(*table, "expression", FileChecker::dotted(prefix, "expression"));
    try {
      (void)expand_kernel_expression(entry.expression, entry.params);
    } catch (const ArgumentError& error) {
      check.fail(table->get("expression")->source().begin.line, FileChecker::dotted(prefix, "expression"),
                 error.what());
    }
    if (entry.source.empty() || entry.expression.empty()) {
      check.fail(entry.line, prefix, "source and expression must not be empty");
    }
  }
  return entry;
}

void read_kernels_table(const FileChecker& check, const toml::table& root, HardwareTarget& target) {
  const toml::table& kernels = check.table(root, "kernels", "kernels");
  for (auto&& [key, node] : kernels) {
    target.kernels.push_back(read_kernel(check, key.str(), node));
  }
  std::sort(target.kernels.begin(), target.kernels.end(),
            [](const KernelEntry& a, const KernelEntry& b) { return a.name < b.name; });
}

void read_defaults_table(const FileChecker& check, const toml::table& root, std::span<const LeverSpec> levers,
                         HardwareTarget& target) {
  const toml::table& defaults = check.table(root, "defaults", "defaults");
  std::vector<std::string_view> keys;
  keys.reserve(levers.size());
  for (const LeverSpec& lever : levers) {
    keys.push_back(lever.toml_key);
  }
  check.only_keys(defaults, "defaults", keys);
  for (const LeverSpec& lever : levers) {
    const std::string dotted = FileChecker::dotted("defaults", lever.toml_key);
    if (!lever.required_in_file && !defaults.contains(lever.toml_key)) {
      continue;
    }
    const toml::node& node = check.require(defaults, lever.toml_key, dotted);
    const auto* value = node.as_boolean();
    if (value == nullptr) {
      check.wrong_type(node, dotted, "boolean");
    }
    target.defaults.emplace(lever.toml_key, value->get());
  }
}

// [roofline]: optional, but when present every key is required, a number and inside its range.
void read_roofline_table(const FileChecker& check, const toml::table& root, HardwareTarget& target) {
  struct Key {
    std::string_view name;
    double Roofline::*field;
    double low, high;
  };
  static constexpr std::array<Key, 6> kKeys{{{"dram_gb_per_s", &Roofline::dram_gb_per_s, 1, 1e6},
                                             {"l2_gb_per_s", &Roofline::l2_gb_per_s, 1, 1e6},
                                             {"fp32_tflops", &Roofline::fp32_tflops, 0.01, 1e5},
                                             {"bf16_tensor_tflops", &Roofline::bf16_tensor_tflops, 0.01, 1e5},
                                             {"launch_overhead_us", &Roofline::launch_overhead_us, 0, 1000},
                                             {"memory_latency_us", &Roofline::memory_latency_us, 0, 1000}}};
  if (root.get("roofline") == nullptr) {
    return;
  }
  const toml::table& table = check.table(root, "roofline", "roofline");
  std::array<std::string_view, kKeys.size()> names{};
  std::transform(kKeys.begin(), kKeys.end(), names.begin(), [](const Key& key) { return key.name; });
  check.only_keys(table, "roofline", names);
  Roofline roofline;
  for (const Key& key : kKeys) {
    const std::string dotted = FileChecker::dotted("roofline", key.name);
    const toml::node& node = check.require(table, key.name, dotted);
    std::optional<double> value;
    if (const auto* number = node.as_floating_point()) {
      value = number->get();
    } else if (const auto* integer = node.as_integer()) {
      value = static_cast<double>(integer->get());
    }
    if (!value) {
      check.wrong_type(node, dotted, "number");
    }
    if (!std::isfinite(*value) || *value < key.low || *value > key.high) {
      check.fail(node.source().begin.line, dotted, fmt::format("{} is outside [{}, {}]", *value, key.low, key.high));
    }
    roofline.*key.field = *value;
  }
  target.roofline = roofline;
}

// [shapes]: optional; "<op>.<argument> = [values]" (TOML's dotted keys make each op a table),
// every value a positive integer, none twice. Whether the op declares that shape constant is the
// runtime's and the CLI's check (ops/pinned_shapes.hpp), which names this file and line too.
void read_shapes_table(const FileChecker& check, const toml::table& root, HardwareTarget& target) {
  if (root.get("shapes") == nullptr) {
    return;
  }
  const toml::table& shapes = check.table(root, "shapes", "shapes");
  for (auto&& [op, op_node] : shapes) {
    const std::string op_key = FileChecker::dotted("shapes", op.str());
    const auto* args = op_node.as_table();
    if (args == nullptr) {
      check.wrong_type(op_node, op_key, "table of <argument> = [values] (shapes.<op>.<argument> = [96])");
    }
    for (auto&& [arg, values_node] : *args) {
      const std::string key = FileChecker::dotted(op_key, arg.str());
      const auto* values = values_node.as_array();
      if (values == nullptr) {
        check.wrong_type(values_node, key, "array of positive integers");
      }
      PinnedShape pinned{std::string(op.str()), std::string(arg.str()), {}, arg.source().begin.line};
      for (const toml::node& value : *values) {
        const auto* integer = value.as_integer();
        if (integer == nullptr) {
          check.wrong_type(value, key, "positive integer");
        }
        if (integer->get() <= 0 || integer->get() > UINT32_MAX) {
          check.fail(value.source().begin.line, key,
                     fmt::format("{} is not a positive 32-bit integer", integer->get()));
        }
        const auto v = static_cast<std::uint64_t>(integer->get());
        if (std::find(pinned.values.begin(), pinned.values.end(), v) != pinned.values.end()) {
          check.fail(value.source().begin.line, key, fmt::format("{} is listed twice", v));
        }
        pinned.values.push_back(v);
      }
      if (pinned.values.empty()) {
        check.fail(pinned.line, key, "an empty list (leave the key out)");
      }
      target.shapes.push_back(std::move(pinned));
    }
  }
}

}  // namespace

ParsedHardware parse_hardware_file(std::string_view text, std::string_view source_name,
                                   std::span<const LeverSpec> levers) {
  FileChecker check(source_name);
  toml::table root;
  try {
    root = toml::parse(text, source_name);
  } catch (const toml::parse_error& error) {
    check.fail(error.source().begin.line, "TOML syntax", error.description());
  }
  check.set_root(root);
  static constexpr std::array<std::string_view, 5> kTables{"target", "kernels", "defaults", "roofline", "shapes"};
  check.only_keys(root, "", kTables);
  ParsedHardware out;
  out.target.source = std::string(source_name);
  read_target_table(check, root, out);
  read_kernels_table(check, root, out.target);
  read_defaults_table(check, root, levers, out.target);
  read_roofline_table(check, root, out.target);
  read_shapes_table(check, root, out.target);
  return out;
}

}  // namespace metrale::detail
