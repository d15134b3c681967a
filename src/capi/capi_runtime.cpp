// capi_runtime.cpp: metrale_runtime_open / close / describe over metrale::Runtime.
// Lever settings in the options reach the runtime as an environment overlay (the one way
// resolve_levers takes an override) and are reported with "options" provenance.
#include "capi_runtime.hpp"

#include <fmt/format.h>

#include <cstddef>
#include <filesystem>
#include <optional>

#include "capi_call.hpp"
#include "jit/bundle.hpp"
#include "ops/op_verdict.hpp"

namespace metrale::capi {
namespace {

// metrale_runtime_options before bundle_dirs (version 1) ended at host_worker_threads; its size,
// padding included, is where bundle_dirs starts. Such a caller's options still open a runtime.
constexpr std::size_t kRuntimeOptionsFirstSize = offsetof(metrale_runtime_options, bundle_dirs);

static_assert(kLeverSpecs.size() == METRALE_LEVER_COUNT, "metrale.h describes every lever");
static_assert(kLeverSpecs[kBaGatesTwinLever].toml_key == "ssm_ba_gates_hopper" &&
                  kLeverSpecs[kFp8TwinLever].toml_key == "fp8_act_quant_hopper" &&
                  kLeverSpecs[kBaGatesTensorCoreLever].toml_key == "ssm_ba_gates_tensor_core",
              "the lever indices name kLeverSpecs' order");

BackendChoice backend_choice(metrale_backend backend) {
  switch (backend) {
    case METRALE_BACKEND_AUTO:
      return BackendChoice::kAuto;
    case METRALE_BACKEND_HOST:
      return BackendChoice::kHost;
    case METRALE_BACKEND_CUDA:
      return BackendChoice::kCuda;
  }
  throw CapiError(METRALE_ERROR_ARGUMENT,
                  fmt::format("options.backend {} is not AUTO (0), HOST (1) or CUDA (2)", static_cast<int>(backend)));
}

// "on", "off", or nullopt for the default; a CapiError for a value outside the enum.
std::optional<std::string> lever_override(metrale_lever_setting setting, std::string_view field) {
  switch (setting) {
    case METRALE_LEVER_DEFAULT:
      return std::nullopt;
    case METRALE_LEVER_ON:
      return "on";
    case METRALE_LEVER_OFF:
      return "off";
  }
  throw CapiError(METRALE_ERROR_ARGUMENT,
                  fmt::format("options.{} {} is not DEFAULT (0), ON (1) or OFF (2)", field, static_cast<int>(setting)));
}

struct LeverOverrides {
  std::optional<std::string> values[METRALE_LEVER_COUNT];
};

LeverOverrides lever_overrides(const metrale_runtime_options& options) {
  LeverOverrides overrides;
  overrides.values[kBaGatesTwinLever] = lever_override(options.ssm_ba_gates_hopper, "ssm_ba_gates_hopper");
  overrides.values[kFp8TwinLever] = lever_override(options.fp8_act_quant_hopper, "fp8_act_quant_hopper");
  overrides.values[kBaGatesTensorCoreLever] =
      lever_override(options.ssm_ba_gates_tensor_core, "ssm_ba_gates_tensor_core");
  return overrides;
}

RuntimeOptions runtime_options(const metrale_runtime_options& options, const LeverOverrides& overrides) {
  RuntimeOptions out;
  out.backend = backend_choice(options.backend);
  out.device_ordinal = options.device_ordinal;
  if (options.target != nullptr) {
    out.target = std::string(options.target);
  }
  if (options.host_sm_count != 0) {
    out.host_sm_count = options.host_sm_count;
  }
  out.host_worker_threads = options.host_worker_threads;
  EnvLookup process = process_environment();
  out.env = [process, overrides](const char* name) -> std::optional<std::string> {
    for (std::size_t i = 0; i < kLeverSpecs.size(); ++i) {
      if (overrides.values[i] && std::string_view(name) == kLeverSpecs[i].env_var) {
        return overrides.values[i];
      }
    }
    return process(name);
  };
  if (options.cache_dir != nullptr) {
    out.cache_dir = std::string(options.cache_dir);
  }
  if (has_field(options.struct_size, offsetof(metrale_runtime_options, bundle_dirs), sizeof(options.bundle_dirs)) &&
      options.bundle_dirs != nullptr) {
    for (const std::filesystem::path& dir : BundleSet::split_dirs(options.bundle_dirs)) {
      out.bundle_dirs.push_back(dir.string());
    }
  }
  return out;
}

void fill_description(metrale_runtime& handle, const LeverOverrides& overrides) {
  Runtime& runtime = *handle.runtime;
  handle.device = runtime.has_device() ? runtime.backend()->describe() : std::string("no device");
  handle.no_device_reason = runtime.no_device_reason();
  handle.target = runtime.target().name;
  handle.target_source = runtime.target().source;
  handle.arch = runtime.target().arch;
  const std::uint32_t fallback = runtime.target().sm_count.value_or(kFallbackSmCount);
  handle.sm_count = runtime.has_device() ? ops::device_sm_count(*runtime.backend(), fallback) : fallback;
  for (std::size_t i = 0; i < kLeverSpecs.size(); ++i) {
    const LeverValue& value = runtime.levers().*kLeverSpecs[i].field;
    metrale_runtime::Lever& lever = handle.levers[i];
    lever.name = std::string(kLeverSpecs[i].toml_key);
    lever.value = value.value;
    if (overrides.values[i]) {
      lever.provenance = "options";
      lever.origin = fmt::format("metrale_runtime_options.{} = {}", kLeverSpecs[i].toml_key, *overrides.values[i]);
    } else {
      lever.provenance = std::string(to_string(value.provenance));
      lever.origin = value.origin;
    }
  }
}

}  // namespace

Runtime& runtime_of(metrale_runtime* handle) {
  require_non_null(handle, "runtime");
  return *handle->runtime;
}

const Runtime& runtime_of(const metrale_runtime* handle) {
  require_non_null(handle, "runtime");
  return *handle->runtime;
}

GpuBackend& device_of(metrale_runtime* handle) {
  Runtime& runtime = runtime_of(handle);
  if (!runtime.has_device()) {
    throw CapiError(METRALE_ERROR_NO_DEVICE, fmt::format("no device: {}", runtime.no_device_reason()));
  }
  return *runtime.backend();
}

const metrale_runtime::Lever& lever_of(const metrale_runtime* handle, std::size_t index) {
  require_non_null(handle, "runtime");
  return handle->levers.at(index);
}

}  // namespace metrale::capi

extern "C" {

void metrale_runtime_options_init(metrale_runtime_options* options) {
  if (options != nullptr) {
    *options = metrale_runtime_options{};
    options->struct_size = sizeof(metrale_runtime_options);
  }
}

metrale_status metrale_runtime_open(const metrale_runtime_options* options, metrale_runtime** out) {
  using namespace metrale::capi;
  return capi_call("metrale_runtime_open", [&] {
    require_non_null(out, "out");
    metrale_runtime_options defaults;
    metrale_runtime_options_init(&defaults);
    if (options != nullptr) {
      require_struct_since(options, "options", kRuntimeOptionsFirstSize);
    }
    const metrale_runtime_options& chosen = options != nullptr ? *options : defaults;
    const LeverOverrides overrides = lever_overrides(chosen);
    auto handle = std::make_unique<metrale_runtime>();
    handle->runtime = metrale::Runtime::open(runtime_options(chosen, overrides));
    fill_description(*handle, overrides);
    *out = handle.release();
  });
}

void metrale_runtime_close(metrale_runtime* runtime) {
  if (runtime == nullptr) {
    return;
  }
  // Background builds finish here, where their failure can become the last error, not in the
  // runtime's destructor, which may not throw.
  (void)metrale::capi::capi_call("metrale_runtime_close", [&] { runtime->runtime->registry().wait_background(); });
  delete runtime;
}

void metrale_runtime_info_init(metrale_runtime_info* info) {
  if (info != nullptr) {
    *info = metrale_runtime_info{};
    info->struct_size = sizeof(metrale_runtime_info);
  }
}

metrale_status metrale_runtime_describe(const metrale_runtime* runtime, metrale_runtime_info* info) {
  using namespace metrale::capi;
  return capi_call("metrale_runtime_describe", [&] {
    require_non_null(runtime, "runtime");
    require_struct(info, "info");
    metrale_runtime_info out;
    metrale_runtime_info_init(&out);
    out.struct_size = info->struct_size;
    out.has_device = runtime->runtime->has_device() ? 1 : 0;
    out.device = runtime->device.c_str();
    out.no_device_reason = runtime->no_device_reason.c_str();
    out.target = runtime->target.c_str();
    out.target_source = runtime->target_source.c_str();
    out.arch = runtime->arch.c_str();
    out.sm_count = runtime->sm_count;
    for (std::size_t i = 0; i < METRALE_LEVER_COUNT; ++i) {
      const metrale_runtime::Lever& lever = runtime->levers[i];
      out.levers[i] =
          metrale_lever_info{lever.name.c_str(), lever.value ? 1 : 0, lever.provenance.c_str(), lever.origin.c_str()};
    }
    *info = out;
  });
}

}  // extern "C"
