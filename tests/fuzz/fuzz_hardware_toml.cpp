// fuzz_hardware_toml.cpp: the HARDWARE.toml loader either accepts a file or refuses it with
// a ConfigError that names the file; it never crashes. An accepted target is re-checked
// against the invariants the guards rely on.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "hardware/hardware_loader.hpp"
#include "hardware/kernel_catalog.hpp"
#include "metrale/error.hpp"
#include "ops/op_kernels.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const metrale::HardwareTarget target =
        metrale::parse_hardware_toml(text, "fuzz/HARDWARE.toml", metrale::ops::library_catalog());
    for (const auto& kernel : target.kernels) {
      if (metrale::ops::kernel_params_violation(kernel.name, kernel.params).has_value()) {
        std::abort();  // the loader accepted parameters the catalog refuses
      }
    }
  } catch (const metrale::ConfigError& e) {
    if (std::string_view(e.what()).find("fuzz/HARDWARE.toml") == std::string_view::npos) {
      std::abort();  // every refusal names the file
    }
  }
  return 0;
}
