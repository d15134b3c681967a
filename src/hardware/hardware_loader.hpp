// hardware/hardware_loader.hpp: reads and validates HARDWARE.toml files.
// Invariant: a returned target passed every check (schema, types, arch/CC agreement, and,
// against `catalog` completed with the kernels the files declare in full, kernel names,
// constraints and twin/parent shapes); anything else throws ConfigError naming the file, the
// dotted key and, where the TOML parser knows it, the line. The library's catalog is
// ops::library_catalog(); an engine's declarations are added to it.
#pragma once

#include <filesystem>
#include <span>
#include <string_view>
#include <vector>

#include "ground/embedded_files.hpp"
#include "metrale/environment.hpp"
#include "metrale/target/hardware_target.hpp"

namespace metrale {

// The environment variable that points the loader at a hardware/ folder on disk.
inline constexpr const char* kHardwareDirEnv = "METRALE_HARDWARE_DIR";

// One file's text; source_name is what error messages and HardwareTarget::source call it.
HardwareTarget parse_hardware_toml(std::string_view text, std::string_view source_name, const KernelCatalog& catalog);

// Files named "<target>/HARDWARE.toml" (as embedded_hardware() names them); each source is
// "<origin>/<name>". Cross-file checks: the name inside equals the folder, no two files
// claim one compute capability, exactly one file is generic. Sorted by target name.
std::vector<HardwareTarget> load_targets_from_files(std::span<const EmbeddedFile> files, std::string_view origin,
                                                    const KernelCatalog& catalog);

// Every <dir>/<target>/HARDWARE.toml; a subfolder without one is an error.
std::vector<HardwareTarget> load_targets_from_dir(const std::filesystem::path& dir, const KernelCatalog& catalog);

// METRALE_HARDWARE_DIR when set and non-empty (it must be an existing directory), else the
// files embedded in the library.
std::vector<HardwareTarget> load_targets(const EnvLookup& env, const KernelCatalog& catalog);
std::vector<HardwareTarget> load_targets(const KernelCatalog& catalog);

}  // namespace metrale
