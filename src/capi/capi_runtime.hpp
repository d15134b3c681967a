// capi_runtime.hpp (private): what a metrale_runtime handle holds: the C++ runtime and the
// strings metrale_runtime_describe hands out, which live as long as the handle.
// Invariant: the strings are written once, at open, so describing needs no lock.
#pragma once

#include <array>
#include <memory>
#include <string>

#include "metrale/metrale.h"
#include "metrale/runtime.hpp"

struct metrale_runtime {
  // One lever as the C caller sees it: "options" provenance when metrale_runtime_options set it.
  struct Lever {
    std::string name;
    bool value = false;
    std::string provenance;
    std::string origin;
  };

  std::unique_ptr<metrale::Runtime> runtime;
  std::string device;
  std::string no_device_reason;
  std::string target;
  std::string target_source;
  std::string arch;
  std::uint32_t sm_count = 0;
  std::array<Lever, METRALE_LEVER_COUNT> levers;
};

namespace metrale::capi {

// The runtime behind a handle; a CapiError (argument) when the handle is NULL.
Runtime& runtime_of(metrale_runtime* handle);
const Runtime& runtime_of(const metrale_runtime* handle);
// The backend, or a CapiError (no device) naming why there is none.
GpuBackend& device_of(metrale_runtime* handle);
// The lever as described (index 0: ssm_ba_gates_hopper, 1: fp8_act_quant_hopper,
// 2: ssm_ba_gates_tensor_core: the order of kLeverSpecs).
const metrale_runtime::Lever& lever_of(const metrale_runtime* handle, std::size_t index);
// Those indices by name (static_assert'ed against kLeverSpecs in capi_runtime.cpp).
inline constexpr std::size_t kBaGatesTwinLever = 0;
inline constexpr std::size_t kFp8TwinLever = 1;
inline constexpr std::size_t kBaGatesTensorCoreLever = 2;

}  // namespace metrale::capi
