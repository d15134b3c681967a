// capi_levers.cpp: metrale_lever_get / find: the runtime's levers by index or [defaults] key,
// with their values and where each came from, as copied into the handle at open.
// Invariant: the strings handed out are the handle's (they live until close).
#include <fmt/format.h>

#include "capi_call.hpp"
#include "capi_runtime.hpp"

namespace metrale::capi {
namespace {

const std::vector<metrale_runtime::Lever>& levers_of(const metrale_runtime* handle) {
  (void)runtime_of(handle);  // a NULL handle: "runtime is NULL"
  return handle->levers;
}

void write_lever(const metrale_runtime::Lever& lever, metrale_lever_info& info) {
  metrale_lever_info out;
  metrale_lever_info_init(&out);
  out.struct_size = info.struct_size;
  out.name = lever.name.c_str();
  out.value = lever.value ? 1 : 0;
  out.provenance = lever.provenance.c_str();
  out.origin = lever.origin.c_str();
  out.env_var = lever.env_var.c_str();
  info = out;
}

}  // namespace
}  // namespace metrale::capi

extern "C" {

void metrale_lever_info_init(metrale_lever_info* info) { metrale::capi::init_struct(info); }

metrale_status metrale_lever_get(const metrale_runtime* runtime, size_t index, metrale_lever_info* info) {
  using namespace metrale::capi;
  return capi_call("metrale_lever_get", [&] {
    const HeldRuntime held(runtime);
    const auto& levers = levers_of(runtime);
    require_struct(info, "info");
    require_index(index, levers.size(), "the runtime", "levers");
    write_lever(levers[index], *info);
  });
}

metrale_status metrale_lever_find(const metrale_runtime* runtime, const char* name, metrale_lever_info* info) {
  using namespace metrale::capi;
  return capi_call("metrale_lever_find", [&] {
    const HeldRuntime held(runtime);
    const auto& levers = levers_of(runtime);
    const std::string_view wanted = c_text(name, "name");
    require_struct(info, "info");
    std::string known;
    for (const metrale_runtime::Lever& lever : levers) {
      if (lever.name == wanted) {
        write_lever(lever, *info);
        return;
      }
      known += (known.empty() ? "" : ", ") + lever.name;
    }
    throw CapiError(METRALE_ERROR_ARGUMENT, fmt::format("no lever named '{}' (levers: {})", wanted, known));
  });
}

}  // extern "C"
