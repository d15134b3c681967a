// hardware_toml.hpp (private): parsing one HARDWARE.toml, keeping the lines the loader's
// cross-file checks need to name in their errors.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "metrale/target/hardware_target.hpp"

namespace metrale::detail {

struct ParsedHardware {
  HardwareTarget target;
  // Lines of target.name and target.compute_capability (0 when unknown).
  std::uint32_t name_line = 0;
  std::uint32_t compute_capability_line = 0;
};

// `levers`: the keys [defaults] may hold (the catalog's levers); a required one must be there.
ParsedHardware parse_hardware_file(std::string_view text, std::string_view source_name,
                                   std::span<const LeverSpec> levers);

}  // namespace metrale::detail
