// bundle_manifest.cpp: a bundle manifest's JSON form, written and read back. Reading refuses,
// as a ConfigError naming the file, anything that is not the format this version writes: another
// format name or version, a field of the wrong JSON type, a number no field's integer holds.
#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>

#include "jit/bundle.hpp"
#include "metrale/error.hpp"

namespace metrale {
namespace {

constexpr std::string_view kFormatName = "metrale-bundle";

}  // namespace

std::string manifest_to_json(const BundleManifest& manifest) {
  nlohmann::json entries = nlohmann::json::array();
  for (const BundleEntry& entry : manifest.entries) {
    nlohmann::json row{{"kernel", entry.fields.kernel},
                       {"params", entry.fields.params_tag},
                       {"arch", entry.fields.arch},
                       {"name_expression", entry.fields.name_expression},
                       {"options", entry.fields.options},
                       {"source_digest", entry.fields.source_digest},
                       {"key", entry.key},
                       {"lowered_name", entry.lowered_name},
                       {"built_by_nvrtc", entry.built_by_nvrtc},
                       {"ptx_file", entry.ptx_file},
                       {"ptx_xxh3", entry.ptx_xxh3},
                       {"cubin_file", entry.cubin_file},
                       {"cubin_xxh3", entry.cubin_xxh3},
                       {"entry_xxh3", entry.entry_xxh3}};
    if (entry.cubin_bytes) {
      row["cubin_bytes"] = *entry.cubin_bytes;
    }
    if (entry.ptx_bytes) {
      row["ptx_bytes"] = *entry.ptx_bytes;
    }
    if (entry.resources) {
      row["resources"] = {{"registers", entry.resources->registers},
                          {"shared_bytes", entry.resources->shared_bytes},
                          {"stack_bytes", entry.resources->stack_bytes},
                          {"spill_stores", entry.resources->spill_stores},
                          {"spill_loads", entry.resources->spill_loads}};
    }
    entries.push_back(std::move(row));
  }
  const nlohmann::json out{{"format", kFormatName},
                           {"version", kBundleFormatVersion},
                           {"library", manifest.library},
                           {"entries", std::move(entries)}};
  return out.dump(2) + "\n";
}

namespace {

// A whole-number field within Int's range. nlohmann's get<int>() casts a double or a wider
// integer unchecked (undefined for 1.2e79: found by fuzz_bundle_manifest), so the JSON number's
// own kind and value are checked first. `what` names the field for the error.
template <typename Int>
Int whole_number(const nlohmann::json& value, const std::string& what) {
  using Limits = std::numeric_limits<Int>;
  if (value.is_number_unsigned()) {
    const auto number = value.get<std::uint64_t>();
    if (number <= static_cast<std::uint64_t>(Limits::max())) {
      return static_cast<Int>(number);
    }
  } else if (value.is_number_integer()) {
    const auto number = value.get<std::int64_t>();
    const bool above_min = number >= static_cast<std::int64_t>(Limits::min());
    const bool below_max =
        number < 0 || static_cast<std::uint64_t>(number) <= static_cast<std::uint64_t>(Limits::max());
    if (above_min && below_max) {
      return static_cast<Int>(number);
    }
  }
  throw ConfigError(
      fmt::format("{} is {}: expected a whole number in [{}, {}]", what, value.dump(), Limits::min(), Limits::max()));
}

BundleManifest manifest_from_document(const nlohmann::json& doc, const std::string& where) {
  if (!doc.is_object() || doc.value("format", "") != kFormatName) {
    throw ConfigError(fmt::format("{}: not a metrale bundle manifest (\"format\" is not \"{}\")", where, kFormatName));
  }
  const nlohmann::json version = doc.contains("version") ? doc.at("version") : nlohmann::json(0);
  if (!version.is_number_integer() || version.get<std::int64_t>() != kBundleFormatVersion) {
    throw ConfigError(fmt::format("{}: bundle format version {} (this library reads {})", where, version.dump(),
                                  kBundleFormatVersion));
  }
  BundleManifest manifest;
  manifest.library = doc.value("library", "");
  if (!doc.contains("entries") || !doc.at("entries").is_array()) {
    throw ConfigError(fmt::format("{}: \"entries\" is missing or not an array", where));
  }
  std::size_t index = 0;
  for (const nlohmann::json& row : doc.at("entries")) {
    try {
      BundleEntry entry;
      entry.fields = EntryKey{.kernel = row.at("kernel").get<std::string>(),
                              .params_tag = row.at("params").get<std::string>(),
                              .arch = row.at("arch").get<std::string>(),
                              .nvrtc_version = "",
                              .options = row.at("options").get<std::string>(),
                              .source_digest = row.at("source_digest").get<std::string>(),
                              .name_expression = row.at("name_expression").get<std::string>()};
      entry.key = row.at("key").get<std::string>();
      entry.lowered_name = row.at("lowered_name").get<std::string>();
      entry.built_by_nvrtc = row.value("built_by_nvrtc", "");
      entry.ptx_file = row.value("ptx_file", "");
      entry.ptx_xxh3 = row.value("ptx_xxh3", "");
      entry.cubin_file = row.value("cubin_file", "");
      entry.cubin_xxh3 = row.value("cubin_xxh3", "");
      entry.entry_xxh3 = row.value("entry_xxh3", "");
      const std::string field = fmt::format("{}: entry {}: ", where, index);
      if (row.contains("cubin_bytes")) {
        entry.cubin_bytes = whole_number<std::uint64_t>(row.at("cubin_bytes"), field + "cubin_bytes");
      }
      if (row.contains("ptx_bytes")) {
        entry.ptx_bytes = whole_number<std::uint64_t>(row.at("ptx_bytes"), field + "ptx_bytes");
      }
      if (row.contains("resources")) {
        const nlohmann::json& r = row["resources"];
        const auto resource = [&](const char* name) { return whole_number<int>(r.at(name), field + name); };
        entry.resources = KernelResources{entry.lowered_name,      resource("registers"),    resource("spill_stores"),
                                          resource("spill_loads"), resource("shared_bytes"), resource("stack_bytes")};
      }
      manifest.entries.push_back(std::move(entry));
    } catch (const nlohmann::json::exception& error) {
      throw ConfigError(fmt::format("{}: entry {}: {}", where, index, error.what()));
    }
    ++index;
  }
  return manifest;
}

}  // namespace

BundleManifest manifest_from_json(const std::string& text, const std::string& where) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& error) {
    // parse_error, and out_of_range for a number no integer or double holds (406, found by
    // fuzz_bundle_manifest): either is a ConfigError naming the file, never a json exception.
    throw ConfigError(fmt::format("{}: not JSON: {}", where, error.what()));
  }
  // A field of the wrong JSON type is a ConfigError naming the file, never a json exception.
  try {
    return manifest_from_document(doc, where);
  } catch (const nlohmann::json::exception& error) {
    throw ConfigError(fmt::format("{}: {}", where, error.what()));
  }
}

}  // namespace metrale
