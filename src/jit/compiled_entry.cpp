// compiled_entry.cpp: the image view of an entry and its section (de)serialisation; the
// metadata section is JSON so a person can read a cache entry with standard tools.
#include "jit/compiled_entry.hpp"

#include <nlohmann/json.hpp>

namespace metrale {
namespace {

const std::string* find_section(const EntrySections& sections, std::string_view name) {
  for (const auto& [section_name, bytes] : sections) {
    if (section_name == name) {
      return &bytes;
    }
  }
  return nullptr;
}

}  // namespace

std::span<const std::byte> CompiledEntry::image() const {
  const std::string* bytes = (cubin && !cubin->empty()) ? cubin.get() : ptx.get();
  if (bytes == nullptr) {
    return {};
  }
  return std::as_bytes(std::span<const char>(bytes->data(), bytes->size()));
}

ImageKind CompiledEntry::image_kind() const { return (cubin && !cubin->empty()) ? ImageKind::kCubin : ImageKind::kPtx; }

EntrySections entry_to_sections(const CompiledEntry& entry) {
  nlohmann::json meta{{"arch", entry.arch},
                      {"lowered_name", entry.lowered_name},
                      {"log", entry.log},
                      {"compile_ms", entry.compile_ms},
                      {"batch_size", entry.batch_size}};
  if (entry.resources) {
    const KernelResources& r = *entry.resources;
    meta["resources"] = {{"entry", r.entry},
                         {"registers", r.registers},
                         {"spill_stores", r.spill_stores},
                         {"spill_loads", r.spill_loads},
                         {"shared_bytes", r.shared_bytes},
                         {"stack_bytes", r.stack_bytes}};
  }
  EntrySections sections{{"meta", meta.dump()}, {"ptx", entry.ptx ? *entry.ptx : std::string()}};
  if (entry.cubin && !entry.cubin->empty()) {
    sections.emplace_back("cubin", *entry.cubin);
  }
  return sections;
}

std::optional<CompiledEntry> entry_from_sections(const EntrySections& sections) {
  const std::string* meta_text = find_section(sections, "meta");
  const std::string* ptx = find_section(sections, "ptx");
  if (meta_text == nullptr || ptx == nullptr) {
    return std::nullopt;
  }
  const nlohmann::json meta = nlohmann::json::parse(*meta_text, nullptr, /*allow_exceptions=*/false);
  if (!meta.is_object()) {
    return std::nullopt;
  }
  try {
    CompiledEntry entry;
    entry.ok = true;
    entry.arch = meta.at("arch").get<std::string>();
    entry.lowered_name = meta.at("lowered_name").get<std::string>();
    entry.log = meta.value("log", std::string());
    entry.compile_ms = meta.value("compile_ms", 0.0);
    entry.batch_size = meta.value("batch_size", std::size_t{1});
    if (meta.contains("resources")) {
      const nlohmann::json& r = meta.at("resources");
      entry.resources = KernelResources{r.at("entry").get<std::string>(), r.at("registers").get<int>(),
                                        r.at("spill_stores").get<int>(),  r.at("spill_loads").get<int>(),
                                        r.at("shared_bytes").get<int>(),  r.at("stack_bytes").get<int>()};
    }
    entry.ptx = std::make_shared<const std::string>(*ptx);
    if (const std::string* cubin = find_section(sections, "cubin"); cubin != nullptr) {
      entry.cubin = std::make_shared<const std::string>(*cubin);
    }
    if (entry.lowered_name.empty() || entry.image().empty()) {
      return std::nullopt;
    }
    return entry;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

}  // namespace metrale
