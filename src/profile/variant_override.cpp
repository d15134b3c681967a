// profile/variant_override.cpp: parsing `--variant` specs and applying them to a target copy,
// checked by the library's kernel catalog (ops/op_kernels.hpp).
#include "profile/variant_override.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <set>

#include "metrale/error.hpp"
#include "ops/op_kernels.hpp"

namespace metrale {
namespace {

constexpr std::string_view kForm = "KERNEL:block=N,lanes=N,groups=N";

[[noreturn]] void refuse(std::string_view spec, std::string_view why) {
  throw ArgumentError(fmt::format("--variant {}: {}", spec, why));
}

std::uint32_t positive(std::string_view spec, std::string_view key, std::string_view text) {
  std::uint32_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value == 0) {
    refuse(spec, fmt::format("{} = '{}': not a positive integer (at most {})", key, text,
                             std::numeric_limits<std::uint32_t>::max()));
  }
  return value;
}

}  // namespace

VariantOverride parse_variant_override(std::string_view spec) {
  VariantOverride out;
  out.spec = std::string(spec);
  const std::size_t colon = spec.find(':');
  if (colon == std::string_view::npos || colon == 0) {
    refuse(spec, fmt::format("expected {}", kForm));
  }
  out.kernel = std::string(spec.substr(0, colon));
  std::string_view rest = spec.substr(colon + 1);
  if (rest.empty()) {
    refuse(spec, fmt::format("no parameters (expected {})", kForm));
  }
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const std::size_t equals = item.find('=');
    if (equals == std::string_view::npos) {
      refuse(spec, fmt::format("'{}': expected key=value (keys: block, lanes, groups)", item));
    }
    const std::string_view key = item.substr(0, equals);
    std::optional<std::uint32_t>* slot = key == "block"    ? &out.block
                                         : key == "lanes"  ? &out.lanes
                                         : key == "groups" ? &out.groups
                                                           : nullptr;
    if (slot == nullptr) {
      refuse(spec, fmt::format("unknown key '{}' (keys: block, lanes, groups)", key));
    }
    if (slot->has_value()) {
      refuse(spec, fmt::format("{} given twice", key));
    }
    *slot = positive(spec, key, item.substr(equals + 1));
  }
  return out;
}

HardwareTarget with_variant_overrides(const HardwareTarget& target, const ops::OpDeclaration& op,
                                      std::span<const VariantOverride> overrides) {
  HardwareTarget out = target;
  std::set<std::string, std::less<>> seen;
  for (const VariantOverride& variant : overrides) {
    const std::vector<std::string_view> known = profiled_op_kernels(op);
    if (std::find(known.begin(), known.end(), variant.kernel) == known.end()) {
      refuse(variant.spec, fmt::format("'{}' is not a kernel of {} (known: {})", variant.kernel, op_profile(op).label,
                                       fmt::join(known, ", ")));
    }
    if (!seen.insert(variant.kernel).second) {
      refuse(variant.spec, fmt::format("a second --variant of {} (one per kernel)", variant.kernel));
    }
    const KernelEntry* shipped = out.find_kernel(variant.kernel);
    KernelEntry entry = shipped != nullptr ? *shipped : KernelEntry{variant.kernel, {}, {}, {}, 0};
    entry.params.block = variant.block.value_or(entry.params.block);
    entry.params.lanes = variant.lanes.value_or(entry.params.lanes);
    entry.params.groups = variant.groups.value_or(entry.params.groups);
    if (const auto problem = ops::check_kernel_params(variant.kernel, entry.params)) {
      const std::string key = problem->param.empty() ? fmt::format("kernels.{}", variant.kernel)
                                                     : fmt::format("kernels.{}.{}", variant.kernel, problem->param);
      refuse(variant.spec, fmt::format("{}: {}", key, problem->reason));
    }
    if (shipped != nullptr) {
      out.kernels[static_cast<std::size_t>(shipped - out.kernels.data())] = std::move(entry);
    } else {
      const auto at = std::lower_bound(out.kernels.begin(), out.kernels.end(), entry.name,
                                       [](const KernelEntry& e, const std::string& name) { return e.name < name; });
      out.kernels.insert(at, std::move(entry));
    }
  }
  return out;
}

}  // namespace metrale
