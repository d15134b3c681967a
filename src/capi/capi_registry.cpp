// capi_registry.cpp: the generic registry through the C ABI: sources, variants, building,
// handles with the reason of an absent one, and launching with an argument array.
// Invariant: an absent handle is a state with a reason, never a failed call; the reason and
// log strings live in thread-local storage until the same function runs again on the thread.
#include <fmt/format.h>

#include <array>
#include <string>

#include "capi_call.hpp"
#include "capi_runtime.hpp"
#include "hardware/variant_expression.hpp"
#include "jit/compile_report.hpp"
#include "jit/compiled_entry.hpp"
#include "metrale/gpu/kernel_launch.hpp"
#include "metrale/jit/kernel_registry.hpp"

namespace metrale::capi {
namespace {

std::string absent_reason(Runtime& runtime, KernelRegistry& registry, VariantId id) {
  const KernelVariant variant = registry.variant(id);  // an ArgumentError for an unknown id
  if (!runtime.has_device()) {
    return fmt::format("no device: {}", runtime.no_device_reason());
  }
  const GpuBackend& backend = *runtime.backend();
  const std::optional<std::string> arch =
      backend.needs_compiled_image() ? KernelRegistry::arch_for(backend) : std::optional<std::string>("host");
  if (!arch) {
    return fmt::format("{}: NVRTC cannot target this device", backend.describe());
  }
  const std::optional<BuildRecord> record = registry.record(id, *arch);
  if (!record) {
    return fmt::format("{} ({}) is not built for {} yet: call metrale_registry_build", variant.kernel,
                       variant.params.tag(), *arch);
  }
  if (!record->load_error.empty()) {
    return "load failed: " + record->load_error;
  }
  if (record->entry != nullptr && !record->entry->ok) {
    return compile_failure_reason(record->entry->log);
  }
  return fmt::format("{} ({}) built but not loaded on {}", variant.kernel, variant.params.tag(), backend.device_key());
}

KernelRegistry& registry_of(metrale_runtime* handle) { return runtime_of(handle).registry(); }

VariantId checked_id(KernelRegistry& registry, std::uint32_t id) {
  (void)registry.variant(id);  // an ArgumentError naming the id when it was never declared
  return id;
}

std::string& handle_reason() {
  thread_local std::string text;
  return text;
}

struct CompileText {
  std::string reason;
  std::string log;
};

CompileText& compile_text() {
  thread_local CompileText text;
  return text;
}

}  // namespace
}  // namespace metrale::capi

extern "C" {

metrale_status metrale_registry_add_source(metrale_runtime* runtime, const char* name, const char* text) {
  using namespace metrale::capi;
  return capi_call("metrale_registry_add_source", [&] {
    const HeldRuntime held(runtime);
    require_non_null(name, "name");
    require_non_null(text, "text");
    if (*name == '\0') {
      throw CapiError(METRALE_ERROR_ARGUMENT, "name is empty");
    }
    registry_of(runtime).add_source(name, text);
  });
}

void metrale_variant_init(metrale_variant* variant) { metrale::capi::init_struct(variant); }

metrale_status metrale_registry_declare(metrale_runtime* runtime, const metrale_variant* variant, uint32_t* id) {
  using namespace metrale::capi;
  return capi_call("metrale_registry_declare", [&] {
    const HeldRuntime held(runtime);
    require_struct(variant, "variant");
    require_non_null(id, "id");
    require_non_null(variant->kernel, "variant.kernel");
    require_non_null(variant->source, "variant.source");
    require_non_null(variant->name_expression, "variant.name_expression");
    // Placeholders ({block}, {lanes}, {groups}) are filled in as for the library's own kernels.
    const metrale::KernelParams params{variant->block, variant->lanes, variant->groups};
    const metrale::VariantId declared = registry_of(runtime).declare(
        metrale::KernelVariant{variant->kernel, variant->source,
                               metrale::expand_variant_expression(variant->name_expression, params), params, false});
    *id = declared;
  });
}

metrale_status metrale_registry_build(metrale_runtime* runtime) {
  using namespace metrale::capi;
  return capi_call("metrale_registry_build", [&] {
    const HeldRuntime held(runtime);
    metrale::GpuBackend& backend = device_of(runtime);
    registry_of(runtime).load(backend, metrale::LoadMode::kWaitForAll);
  });
}

void metrale_build_result_init(metrale_build_result* result) { metrale::capi::init_struct(result); }

metrale_status metrale_registry_compile(metrale_runtime* runtime, uint32_t id, const char* arch,
                                        metrale_build_result* result) {
  using namespace metrale::capi;
  return capi_call("metrale_registry_compile", [&] {
    const HeldRuntime held(runtime);
    require_struct(result, "result");
    metrale::Runtime& rt = runtime_of(runtime);
    const std::string chosen = arch != nullptr ? std::string(arch) : rt.target().arch;
    if (chosen.empty()) {
      throw CapiError(METRALE_ERROR_ARGUMENT,
                      fmt::format("arch: target {} has no arch of its own without a device; name one (\"sm_90\")",
                                  rt.target().name));
    }
    const std::array<metrale::VariantId, 1> ids{checked_id(rt.registry(), id)};
    const metrale::BuildRecord record = rt.registry().build(chosen, ids).at(0);
    CompileText& text = compile_text();
    text.log = record.entry != nullptr ? record.entry->log : std::string();
    text.reason = record.ok() ? std::string() : "compile failed: " + metrale::first_error_line(text.log);
    metrale_build_result out;
    metrale_build_result_init(&out);
    out.struct_size = result->struct_size;
    out.ok = record.ok() ? 1 : 0;
    out.reason = record.ok() ? nullptr : text.reason.c_str();
    out.log = text.log.c_str();
    *result = out;
  });
}

metrale_status metrale_registry_handle(const metrale_runtime* runtime, uint32_t id, uint64_t* handle,
                                       const char** reason) {
  using namespace metrale::capi;
  return capi_call("metrale_registry_handle", [&] {
    const HeldRuntime held(runtime);
    require_non_null(handle, "handle");
    (void)runtime_of(runtime);  // a NULL handle: "runtime is NULL"
    // The handle owns the runtime through a pointer: reading the registry does not change it.
    metrale::Runtime& rt = *runtime->runtime;
    metrale::KernelRegistry& registry = rt.registry();
    const metrale::VariantId checked = checked_id(registry, id);
    metrale::KernelHandle found{};
    if (rt.has_device()) {
      const auto device = registry.device_index(*rt.backend());
      found = device ? registry.handle(*device, checked) : metrale::KernelHandle{};
    }
    std::string& why = handle_reason();
    why = found.present() ? std::string() : absent_reason(rt, registry, checked);
    *handle = found.value;
    if (reason != nullptr) {
      *reason = found.present() ? nullptr : why.c_str();
    }
  });
}

void metrale_launch_config_init(metrale_launch_config* config) {
  if (metrale::capi::init_struct(config)) {
    config->grid[0] = config->grid[1] = config->grid[2] = 1;
    config->block[0] = config->block[1] = config->block[2] = 1;
  }
}

metrale_status metrale_launch(metrale_runtime* runtime, uint64_t handle, const metrale_launch_config* config,
                              const metrale_kernel_arg* args, size_t arg_count, uint64_t stream) {
  using namespace metrale::capi;
  return capi_call("metrale_launch", [&] {
    const HeldRuntime held(runtime);
    require_struct(config, "config");
    if (arg_count > 0) {
      require_non_null(args, "args");
    }
    metrale::KernelLaunch launch(device_of(runtime), metrale::KernelHandle{handle});
    launch.grid({config->grid[0], config->grid[1], config->grid[2]})
        .block({config->block[0], config->block[1], config->block[2]})
        .dynamic_shared(config->dynamic_shared_bytes);
    for (size_t i = 0; i < arg_count; ++i) {
      launch.arg_bytes(args[i].value, args[i].size);
    }
    launch.launch(stream);
  });
}

metrale_status metrale_synchronize(metrale_runtime* runtime, uint64_t stream) {
  using namespace metrale::capi;
  return capi_call("metrale_synchronize", [&] {
    const HeldRuntime held(runtime);
    device_of(runtime).synchronize(stream);
  });
}

}  // extern "C"
