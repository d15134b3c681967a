// hardware_loader.cpp: every HARDWARE.toml of a folder or of the library, checked together.
// Invariant: the returned set has unique names equal to their folders, unique compute
// capabilities and exactly one generic target, sorted by name.
#include "hardware/hardware_loader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

#include "ground/log.hpp"
#include "hardware/kernel_catalog.hpp"
#include "hardware_toml.hpp"
#include "metrale/error.hpp"

namespace metrale {
namespace {

constexpr std::string_view kFileName = "HARDWARE.toml";
constexpr std::string_view kEmbeddedOrigin = "<embedded>";

std::string at_line(const detail::ParsedHardware& parsed, std::uint32_t line) {
  return line != 0 ? fmt::format("{}:{}", parsed.target.source, line) : parsed.target.source;
}

// "<folder>/HARDWARE.toml" -> "<folder>"; anything else is an error.
std::string_view folder_of(std::string_view name, std::string_view origin) {
  const auto slash = name.find('/');
  if (slash == std::string_view::npos || slash == 0 || name.substr(slash + 1) != kFileName) {
    throw ConfigError(fmt::format("{}/{}: expected a file named <target>/{}", origin, name, kFileName));
  }
  return name.substr(0, slash);
}

void check_unique(const std::vector<detail::ParsedHardware>& parsed) {
  const detail::ParsedHardware* generic = nullptr;
  for (std::size_t i = 0; i < parsed.size(); ++i) {
    const auto& current = parsed[i];
    for (std::size_t j = 0; j < i; ++j) {
      const auto& earlier = parsed[j];
      if (earlier.target.name == current.target.name) {
        throw ConfigError(fmt::format("{}: target.name: \"{}\" is also the name in {}",
                                      at_line(current, current.name_line), current.target.name,
                                      at_line(earlier, earlier.name_line)));
      }
      if (current.target.compute_capability && earlier.target.compute_capability == current.target.compute_capability) {
        throw ConfigError(fmt::format("{}: target.compute_capability: {} is also claimed by {}",
                                      at_line(current, current.compute_capability_line),
                                      current.target.compute_capability->str(),
                                      at_line(earlier, earlier.compute_capability_line)));
      }
    }
    if (!current.target.compute_capability) {
      if (generic != nullptr) {
        throw ConfigError(fmt::format(
            "{}: target.compute_capability: \"any\" is also claimed by {}; exactly one "
            "target may be generic",
            at_line(current, current.compute_capability_line), at_line(*generic, generic->compute_capability_line)));
      }
      generic = &current;
    }
  }
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) {
    throw ConfigError(fmt::format("{}: cannot be read", path.string()));
  }
  return text.str();
}

}  // namespace

HardwareTarget parse_hardware_toml(std::string_view text, std::string_view source_name, const KernelCatalog& catalog) {
  HardwareTarget target = detail::parse_hardware_file(text, source_name, catalog.levers()).target;
  check_target_kernels(target, complete_catalog(catalog, std::span(&target, 1)));
  return target;
}

std::vector<HardwareTarget> load_targets_from_files(std::span<const EmbeddedFile> files, std::string_view origin,
                                                    const KernelCatalog& catalog) {
  if (files.empty()) {
    throw ConfigError(fmt::format("{}: no <target>/{} files", origin, kFileName));
  }
  std::vector<detail::ParsedHardware> parsed;
  for (const auto& file : files) {
    const std::string_view folder = folder_of(file.name, origin);
    auto& current = parsed.emplace_back(
        detail::parse_hardware_file(file.text, fmt::format("{}/{}", origin, file.name), catalog.levers()));
    if (current.target.name != folder) {
      throw ConfigError(fmt::format("{}: target.name: \"{}\" must equal its folder's name \"{}\"",
                                    at_line(current, current.name_line), current.target.name, folder));
    }
  }
  check_unique(parsed);
  if (std::none_of(parsed.begin(), parsed.end(), [](const auto& p) { return !p.target.compute_capability; })) {
    throw ConfigError(
        fmt::format("{}: target.compute_capability: no target is generic (compute_capability = \"any\"); "
                    "exactly one must be",
                    origin));
  }
  std::vector<HardwareTarget> targets;
  targets.reserve(parsed.size());
  for (auto& p : parsed) {
    targets.push_back(std::move(p.target));
  }
  std::sort(targets.begin(), targets.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  // Names are checked once every declaration is in: a kernel one file declares in full may be
  // shipped by another.
  const KernelCatalog complete = complete_catalog(catalog, targets);
  for (const HardwareTarget& target : targets) {
    check_target_kernels(target, complete);
  }
  return targets;
}

std::vector<HardwareTarget> load_targets_from_dir(const std::filesystem::path& dir, const KernelCatalog& catalog) {
  std::error_code error;
  if (!std::filesystem::is_directory(dir, error)) {
    throw ConfigError(fmt::format("{}: not an existing directory of <target>/{} files", dir.string(), kFileName));
  }
  std::vector<std::string> folders;
  try {
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      const std::string folder = entry.path().filename().string();
      if (entry.is_directory() && !folder.starts_with('.')) {
        folders.push_back(folder);
      }
    }
  } catch (const std::filesystem::filesystem_error& e) {
    throw ConfigError(fmt::format("{}: cannot be listed: {}", dir.string(), e.code().message()));
  }
  std::sort(folders.begin(), folders.end());
  std::vector<std::string> names;
  std::vector<std::string> texts;
  for (const auto& folder : folders) {
    const auto path = dir / folder / kFileName;
    if (!std::filesystem::is_regular_file(path, error)) {
      throw ConfigError(fmt::format("{}: folder has no {}", (dir / folder).string(), kFileName));
    }
    names.push_back(fmt::format("{}/{}", folder, kFileName));
    texts.push_back(read_text(path));
  }
  std::vector<EmbeddedFile> files;
  for (std::size_t i = 0; i < names.size(); ++i) {
    files.push_back({names[i], texts[i]});
  }
  std::string origin = dir.string();
  while (origin.size() > 1 && origin.back() == '/') {
    origin.pop_back();
  }
  return load_targets_from_files(files, origin, catalog);
}

std::vector<HardwareTarget> load_targets(const EnvLookup& env, const KernelCatalog& catalog) {
  if (auto dir = env(kHardwareDirEnv); dir && !dir->empty()) {
    std::error_code error;
    if (!std::filesystem::is_directory(*dir, error)) {
      throw ConfigError(fmt::format("{}={}: not an existing directory", kHardwareDirEnv, *dir));
    }
    logger().debug("hardware targets from {} ({})", *dir, kHardwareDirEnv);
    return load_targets_from_dir(*dir, catalog);
  }
  return load_targets_from_files(embedded_hardware(), kEmbeddedOrigin, catalog);
}

std::vector<HardwareTarget> load_targets(const KernelCatalog& catalog) {
  return load_targets(process_environment(), catalog);
}

}  // namespace metrale
