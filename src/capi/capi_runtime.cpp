// capi_runtime.cpp: metrale_runtime_open / close / describe / tuning_status over metrale::Runtime. Lever
// settings in the options become RuntimeOptions::levers (the runtime checks their keys against
// what the ops declare and reports them with "options" provenance); everything the describing
// functions hand out is copied into the handle once, here.
#include "capi_runtime.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <map>
#include <vector>

#include "capi_call.hpp"
#include "jit/bundle.hpp"
#include "ops/op_spec_toml.hpp"
#include "ops/op_verdict.hpp"

namespace metrale::capi {
namespace {

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

// options.levers as the runtime takes them: each name given once, each value 0 or 1. Whether a
// key is a lever some op declares is the runtime's check (a ConfigError naming the key).
std::map<std::string, bool> lever_overrides(const metrale_runtime_options& options) {
  std::map<std::string, bool> levers;
  if (options.lever_count == 0) {
    return levers;
  }
  if (options.levers == nullptr) {
    throw CapiError(METRALE_ERROR_ARGUMENT,
                    fmt::format("options.levers is NULL but options.lever_count is {}", options.lever_count));
  }
  for (std::size_t i = 0; i < options.lever_count; ++i) {
    const metrale_lever_override& lever = options.levers[i];
    const std::string_view name = c_text(lever.name, fmt::format("options.levers[{}].name", i));
    if (lever.value != 0 && lever.value != 1) {
      throw CapiError(METRALE_ERROR_ARGUMENT,
                      fmt::format("options.levers[{}] ({}): value {} is not 0 (off) or 1 (on)", i, name, lever.value));
    }
    if (!levers.emplace(std::string(name), lever.value == 1).second) {
      throw CapiError(METRALE_ERROR_ARGUMENT, fmt::format("options.levers[{}]: lever '{}' is set twice", i, name));
    }
  }
  return levers;
}

// options.shapes ("op.arg=96,90;op.arg=4") as RuntimeOptions::shapes; which op and argument is
// the runtime's check.
std::map<std::string, std::vector<std::uint64_t>> shape_pins(std::string_view text) {
  std::map<std::string, std::vector<std::uint64_t>> pins;
  std::size_t from = 0;
  while (from < text.size()) {
    const std::size_t end = std::min(text.find(';', from), text.size());
    const std::string_view entry = text.substr(from, end - from);
    from = end + 1;
    const std::size_t equals = entry.find('=');
    if (equals == std::string_view::npos || equals == 0 || equals + 1 == entry.size()) {
      throw CapiError(METRALE_ERROR_ARGUMENT,
                      fmt::format("options.shapes: '{}' is not <op>.<argument>=<value>,<value>...", entry));
    }
    std::vector<std::uint64_t>& values = pins[std::string(entry.substr(0, equals))];
    std::string_view list = entry.substr(equals + 1);
    while (!list.empty()) {
      const std::size_t comma = std::min(list.find(','), list.size());
      const std::string_view item = list.substr(0, comma);
      std::uint64_t value = 0;
      const auto [rest, error] = std::from_chars(item.data(), item.data() + item.size(), value);
      if (error != std::errc() || rest != item.data() + item.size() || value == 0) {
        throw CapiError(METRALE_ERROR_ARGUMENT,
                        fmt::format("options.shapes: '{}' in '{}' is not a positive integer", item, entry));
      }
      values.push_back(value);
      list = comma < list.size() ? list.substr(comma + 1) : std::string_view();
    }
  }
  return pins;
}

// ABI 6's engine ops as data: each text's op, kernels and sources (src/ops/op_spec_toml.hpp); a
// template named by source_file is read relative to the working directory.
void add_op_specs(const metrale_runtime_options& options, RuntimeOptions& out) {
  if (options.op_spec_count != 0 && options.op_specs == nullptr) {
    throw CapiError(METRALE_ERROR_ARGUMENT,
                    fmt::format("options.op_specs is NULL with op_spec_count {}", options.op_spec_count));
  }
  for (std::size_t i = 0; i < options.op_spec_count; ++i) {
    if (options.op_specs[i] == nullptr) {
      throw CapiError(METRALE_ERROR_ARGUMENT, fmt::format("options.op_specs[{}] is NULL", i));
    }
    ops::BuiltOp built = ops::build_op_text(options.op_specs[i], fmt::format("options.op_specs[{}]", i),
                                            std::filesystem::current_path());
    for (auto& [name, text] : built.sources) {
      out.sources[name] = std::move(text);
    }
    for (KernelDeclaration& kernel : built.kernels) {
      out.kernels.push_back(std::move(kernel));
    }
    out.ops.push_back(std::move(built.op));
  }
}

RuntimeOptions runtime_options(const metrale_runtime_options& options) {
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
  out.levers = lever_overrides(options);
  if (options.cache_dir != nullptr) {
    out.cache_dir = std::string(options.cache_dir);
  }
  if (options.bundle_dirs != nullptr) {
    for (const std::filesystem::path& dir : BundleSet::split_dirs(options.bundle_dirs)) {
      out.bundle_dirs.push_back(dir.string());
    }
  }
  // ABI 3's fields, read only from a struct that holds them (an ABI 2 caller's is smaller).
  if (has_field(options.struct_size, offsetof(metrale_runtime_options, verify), sizeof(options.verify))) {
    if (options.verify < -1 || options.verify > 1) {
      throw CapiError(
          METRALE_ERROR_ARGUMENT,
          fmt::format("options.verify is {}: -1 (METRALE_VERIFY decides), 0 (off) or 1 (on)", options.verify));
    }
    if (options.verify != -1) {
      out.verify = options.verify == 1;
    }
  }
  if (has_field(options.struct_size, offsetof(metrale_runtime_options, verify_time_limit_ms),
                sizeof(options.verify_time_limit_ms)) &&
      options.verify_time_limit_ms != 0) {
    out.verify_time_limit_ms = options.verify_time_limit_ms;
  }
  if (has_field(options.struct_size, offsetof(metrale_runtime_options, bundle_pubkey), sizeof(options.bundle_pubkey)) &&
      options.bundle_pubkey != nullptr && *options.bundle_pubkey != '\0') {
    out.bundle_public_key = std::string(options.bundle_pubkey);
  }
  if (has_field(options.struct_size, offsetof(metrale_runtime_options, remote_cache), sizeof(options.remote_cache)) &&
      options.remote_cache != nullptr) {
    out.remote_cache = std::string(options.remote_cache);  // "": none, over the variable
  }
  if (has_field(options.struct_size, offsetof(metrale_runtime_options, compile_timeout_s),
                sizeof(options.compile_timeout_s)) &&
      options.compile_timeout_s != 0.0) {
    if (!std::isfinite(options.compile_timeout_s) || options.compile_timeout_s < 0.0) {
      throw CapiError(METRALE_ERROR_ARGUMENT,
                      fmt::format("options.compile_timeout_s is {}: 0 (METRALE_COMPILE_TIMEOUT_S decides) or a "
                                  "positive number of seconds",
                                  options.compile_timeout_s));
    }
    out.compile_timeout_s = options.compile_timeout_s;
  }
  if (has_field(options.struct_size, offsetof(metrale_runtime_options, shapes), sizeof(options.shapes)) &&
      options.shapes != nullptr) {
    out.shapes = shape_pins(options.shapes);
  }
  if (has_field(options.struct_size, offsetof(metrale_runtime_options, op_spec_count), sizeof(options.op_spec_count))) {
    add_op_specs(options, out);
  }
  if (has_field(options.struct_size, offsetof(metrale_runtime_options, tuning_table), sizeof(options.tuning_table)) &&
      options.tuning_table != nullptr) {
    out.tuning_table = std::string(options.tuning_table);  // "": none, over the variable
  }
  return out;
}

std::string joined(const std::vector<std::string>& items) {
  std::string text;
  for (const std::string& item : items) {
    text += (text.empty() ? "" : ",") + item;
  }
  return text;
}

metrale_runtime::OpText op_text(const ops::OpDeclaration& op) {
  metrale_runtime::OpText text;
  text.aliases = joined(op.aliases);
  for (const ops::RoleDecl& role : op.roles) {
    text.role_aliases.push_back(joined(role.aliases));
  }
  for (const ops::ArgDecl& arg : op.args) {
    text.arg_dims.push_back(joined(arg.dims));
    text.arg_dtypes.emplace_back(ops::to_string(arg.dtype));
  }
  return text;
}

void fill_description(metrale_runtime& handle) {
  const Runtime& runtime = *handle.runtime;
  handle.device = runtime.has_device() ? runtime.backend()->describe() : std::string("no device");
  handle.no_device_reason = runtime.no_device_reason();
  handle.target = runtime.target().name;
  handle.target_source = runtime.target().source;
  handle.arch = runtime.target().arch;
  const std::uint32_t fallback = runtime.target().sm_count.value_or(kFallbackSmCount);
  handle.sm_count = runtime.has_device() ? ops::device_sm_count(*runtime.backend(), fallback) : fallback;
  handle.tuning_status = runtime.tuning_status();
  for (const Levers::Entry& entry : runtime.levers().entries()) {
    handle.levers.push_back(metrale_runtime::Lever{entry.spec.toml_key, entry.value.value,
                                                   std::string(to_string(entry.value.provenance)), entry.value.origin,
                                                   entry.spec.environment_variable()});
  }
  for (const ops::OpDeclaration& op : runtime.ops().ops()) {
    handle.ops.push_back(op_text(op));
  }
}

}  // namespace

std::string_view c_text(const char* name, std::string_view what) {
  require_non_null(name, what);
  return name;
}

const Runtime& HeldRuntime::checked(const metrale_runtime* handle) {
  require_non_null(handle, "runtime");
  require_non_null(handle->runtime.get(), "runtime");
  return *handle->runtime;
}

HeldRuntime::HeldRuntime(const metrale_runtime* handle) : scope_(checked(handle)) {}

Runtime& runtime_of(metrale_runtime* handle) {
  require_non_null(handle, "runtime");
  require_non_null(handle->runtime.get(), "runtime");
  return *handle->runtime;
}

const Runtime& runtime_of(const metrale_runtime* handle) {
  require_non_null(handle, "runtime");
  require_non_null(handle->runtime.get(), "runtime");
  return *handle->runtime;
}

GpuBackend& device_of(metrale_runtime* handle) {
  Runtime& runtime = runtime_of(handle);
  if (!runtime.has_device()) {
    throw CapiError(METRALE_ERROR_NO_DEVICE, fmt::format("no device: {}", runtime.no_device_reason()));
  }
  return *runtime.backend();
}

FoundOp find_op(const metrale_runtime* handle, const char* name) {
  const Runtime& runtime = runtime_of(handle);
  const ops::OpDeclaration& op = runtime.ops().get(c_text(name, "op"));
  return FoundOp{&op, static_cast<std::size_t>(&op - runtime.ops().ops().data())};
}

}  // namespace metrale::capi

extern "C" {

void metrale_runtime_options_init(metrale_runtime_options* options) {
  if (metrale::capi::init_struct(options)) {
    options->verify = -1;
  }
}

metrale_status metrale_runtime_open(const metrale_runtime_options* options, metrale_runtime** out) {
  using namespace metrale::capi;
  return capi_call("metrale_runtime_open", [&] {
    require_non_null(out, "out");
    metrale_runtime_options defaults;
    metrale_runtime_options_init(&defaults);
    if (options != nullptr) {
      // ABI 2's struct ended at bundle_dirs: it is still accepted (verification then as METRALE_VERIFY says).
      require_struct_since(options, "options", offsetof(metrale_runtime_options, verify));
    }
    auto handle = std::make_unique<metrale_runtime>();
    handle->runtime = metrale::Runtime::open(runtime_options(options != nullptr ? *options : defaults));
    fill_description(*handle);
    *out = handle.release();
  });
}

metrale_status metrale_runtime_shutdown(metrale_runtime* runtime) {
  using namespace metrale::capi;
  // Background builds finish here, where their failure can become the last error, not in the
  // runtime's destructor, which may not throw. A second shutdown waits for the first, then is OK.
  return capi_call("metrale_runtime_shutdown", [&] {
    require_non_null(runtime, "runtime");
    if (runtime->runtime) {
      runtime->runtime->close();
    }
  });
}

void metrale_runtime_close(metrale_runtime* runtime) {
  if (runtime == nullptr) {
    return;
  }
  (void)metrale_runtime_shutdown(runtime);
  if (runtime->runtime && runtime->runtime->held_by_this_thread()) {
    // Inside a call on this handle (its log callback): that call still uses the handle, so only
    // the shutdown happens; a close outside the call frees it.
    return;
  }
  delete runtime;
}

void metrale_runtime_info_init(metrale_runtime_info* info) { metrale::capi::init_struct(info); }

const char* metrale_runtime_tuning_status(const metrale_runtime* runtime) {
  // Copied into the handle at open (fill_description): readable after a shutdown, until close.
  if (runtime == nullptr || !runtime->runtime) {
    (void)metrale::capi::fail(METRALE_ERROR_ARGUMENT, "metrale_runtime_tuning_status: runtime is NULL");
    return nullptr;
  }
  metrale::capi::clear_last_error();
  return runtime->tuning_status.c_str();
}

metrale_status metrale_runtime_describe(const metrale_runtime* runtime, metrale_runtime_info* info) {
  using namespace metrale::capi;
  return capi_call("metrale_runtime_describe", [&] {
    const HeldRuntime held(runtime);
    const metrale::Runtime& rt = runtime_of(runtime);
    // ABI 2's struct ended at op_count: filled up to the caller's size, never past it.
    require_struct_since(info, "info", offsetof(metrale_runtime_info, verify));
    metrale_runtime_info out;
    metrale_runtime_info_init(&out);
    out.struct_size = info->struct_size;
    out.has_device = rt.has_device() ? 1 : 0;
    out.device = runtime->device.c_str();
    out.no_device_reason = runtime->no_device_reason.c_str();
    out.target = runtime->target.c_str();
    out.target_source = runtime->target_source.c_str();
    out.arch = runtime->arch.c_str();
    out.sm_count = runtime->sm_count;
    out.lever_count = runtime->levers.size();
    out.op_count = runtime->ops.size();
    out.verify = rt.verification_enabled() ? 1 : 0;
    std::memcpy(info, &out, std::min(info->struct_size, sizeof(out)));
  });
}

}  // extern "C"
