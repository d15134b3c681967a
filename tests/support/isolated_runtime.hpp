// tests/support/isolated_runtime.hpp: runtime options for tests that must not see the process
// environment (levers come from the HARDWARE.toml file only) nor touch the user's disk cache
// (memory-only registry), and an upload helper for their inputs. Verification is off here: a
// cold verification costs about a second per open on the host backend and most tests open many
// runtimes (the product's default stays on; tests/unit/runtime_verification_test.cpp turns it on).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "metrale/runtime.hpp"

namespace metrale::test {

inline std::optional<std::string> no_environment(const char* /*name*/) { return std::nullopt; }

inline RuntimeOptions isolated_runtime_options(BackendChoice backend, std::uint32_t host_sm_count = 132,
                                               std::optional<std::string> target = std::nullopt) {
  RuntimeOptions options;
  options.backend = backend;
  options.target = std::move(target);
  options.host_sm_count = host_sm_count;
  options.env = no_environment;
  options.registry.emplace();
  options.registry->store = {};  // memory only: tests leave the user's cache alone
  options.verify = false;        // see the header comment
  return options;
}

// Copies `values` into a fresh allocation on `gpu`.
template <typename T>
DevicePtr upload(GpuBackend& gpu, const std::vector<T>& values) {
  const DevicePtr ptr = gpu.alloc(values.size() * sizeof(T));
  gpu.copy_to_device(ptr, values.data(), values.size() * sizeof(T));
  return ptr;
}

}  // namespace metrale::test
