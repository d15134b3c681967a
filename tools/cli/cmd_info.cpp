// cmd_info.cpp: `metrale-jit info [--json]`: what this process would compile and run with, the
// report an engine's bug template asks for: the library's version; the NVRTC loaded (file,
// version, identity, the place it came from, or why none) and every place searched, in order
// (jit/cuda_search.hpp); the CUDA header set kernels compile against (folders, identity, place,
// or the problem); the driver (its CUDA version, the kernel module's version) and each device
// (name, compute capability); the disk cache folder and the variable that chose it.
// Invariant: it never fails for lack of CUDA: every part says what it found or why not, and the
// command exits 0 (it is how a user finds out what is missing).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "command.hpp"
#include "gpu/cuda_driver.hpp"
#include "gpu/cuda_identity.hpp"
#include "jit/cache_location.hpp"
#include "jit/cuda_search.hpp"
#include "jit/cuda_toolkit.hpp"
#include "jit/nvrtc_library.hpp"
#include "metrale/environment.hpp"

namespace metrale::cli {
namespace {

nlohmann::json nvrtc_json() {
  const NvrtcLibrary& nvrtc = nvrtc_library();
  nlohmann::json searched = nlohmann::json::array();
  for (const CudaPlace& place : cuda_search_places(process_cuda_search_inputs())) {
    searched.push_back({{"origin", place.origin}, {"nvrtc", place.nvrtc}, {"include_dirs", place.include_dirs}});
  }
  if (!nvrtc.available()) {
    return {{"found", false}, {"reason", nvrtc.reason}, {"searched", searched}};
  }
  return {{"found", true},          {"path", nvrtc.path},  {"version", nvrtc.version}, {"identity", nvrtc.identity},
          {"origin", nvrtc.origin}, {"searched", searched}};
}

nlohmann::json headers_json() {
  const CudaHeaderChoice& choice = cuda_header_choice();
  const std::optional<CudaToolkit>& toolkit = cuda_toolkit();
  if (!choice.dirs || !toolkit) {
    return {{"found", false}, {"reason", choice.problem}};
  }
  return {{"found", true},
          {"include_dirs", toolkit->include_dirs},
          {"identity", toolkit->identity},
          {"origin", choice.origin}};
}

nlohmann::json driver_json() {
  const CudaDriverStatus& status = CudaDriver::load();
  nlohmann::json out{{"found", status.driver != nullptr}};
  std::ifstream proc("/proc/driver/nvidia/version");
  std::stringstream text;
  text << proc.rdbuf();
  if (const std::optional<std::string> module = nvidia_driver_version(text.str())) {
    out["kernel_module"] = *module;
  }
  nlohmann::json devices = nlohmann::json::array();
  if (status.driver == nullptr) {
    out["reason"] = status.reason;
    out["devices"] = devices;
    return out;
  }
  const CudaDriver& driver = *status.driver;
  int version = 0;
  if (driver.driver_get_version != nullptr && driver.driver_get_version(&version) == CUDA_SUCCESS) {
    out["cuda"] = cuda_version_text(version);
  }
  if (!status.reason.empty()) {
    out["reason"] = status.reason;
  }
  for (int i = 0; i < status.device_count; ++i) {
    CUdevice device = 0;
    if (driver.device_get(&device, i) != CUDA_SUCCESS) {
      continue;
    }
    std::string name(256, '\0');
    if (driver.device_get_name(name.data(), static_cast<int>(name.size()), device) == CUDA_SUCCESS) {
      name.resize(name.find('\0'));
    } else {
      name = "?";
    }
    int major = 0;
    int minor = 0;
    driver.device_get_attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
    driver.device_get_attribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
    devices.push_back({{"index", i}, {"name", name}, {"compute_capability", fmt::format("{}.{}", major, minor)}});
  }
  out["devices"] = devices;
  return out;
}

nlohmann::json cache_json() {
  const CacheDirChoice choice = choose_cache_dir(process_environment());
  if (!choice.dir) {
    return {{"dir", nullptr}, {"source", choice.source}, {"problem", choice.problem}};
  }
  return {{"dir", choice.dir->string()}, {"source", choice.source}};
}

nlohmann::json info_json() {
  return {{"metrale", METRALE_VERSION_STRING},
          {"nvrtc", nvrtc_json()},
          {"cuda_headers", headers_json()},
          {"driver", driver_json()},
          {"cache", cache_json()}};
}

std::string info_text(const nlohmann::json& info) {
  std::string out = fmt::format("metrale {}\n", info["metrale"].get<std::string>());
  const nlohmann::json& nvrtc = info["nvrtc"];
  if (nvrtc["found"].get<bool>()) {
    out += fmt::format("NVRTC         {} {}\n", nvrtc["version"].get<std::string>(), nvrtc["path"].get<std::string>());
    out += fmt::format("  from        {}\n", nvrtc["origin"].get<std::string>());
    out += fmt::format("  identity    {}\n", nvrtc["identity"].get<std::string>());
  } else {
    out += fmt::format("NVRTC         none: {}\n", nvrtc["reason"].get<std::string>());
  }
  out += "  searched    ";
  std::vector<std::string> places;
  for (const nlohmann::json& place : nvrtc["searched"]) {
    places.push_back(place["origin"].get<std::string>());
  }
  out += fmt::format("{}\n", fmt::join(places, "; "));
  const nlohmann::json& headers = info["cuda_headers"];
  if (headers["found"].get<bool>()) {
    out += fmt::format("CUDA headers  {}\n", fmt::join(headers["include_dirs"].get<std::vector<std::string>>(), " "));
    out += fmt::format("  from        {}\n", headers["origin"].get<std::string>());
    out += fmt::format("  identity    {}\n", headers["identity"].get<std::string>());
  } else {
    out += fmt::format("CUDA headers  none: {}\n", headers["reason"].get<std::string>());
  }
  const nlohmann::json& driver = info["driver"];
  if (driver["found"].get<bool>()) {
    out += fmt::format("driver        {}{}\n", driver.value("cuda", std::string("CUDA ?")),
                       driver.contains("kernel_module")
                           ? fmt::format(" (kernel module {})", driver["kernel_module"].get<std::string>())
                           : std::string());
  } else {
    out += fmt::format("driver        none: {}\n", driver["reason"].get<std::string>());
  }
  if (driver["devices"].empty()) {
    out += "devices       none\n";
  }
  for (const nlohmann::json& device : driver["devices"]) {
    out += fmt::format("device {:<6} {} (compute capability {})\n", device["index"].get<int>(),
                       device["name"].get<std::string>(), device["compute_capability"].get<std::string>());
  }
  const nlohmann::json& cache = info["cache"];
  if (cache["dir"].is_null()) {
    out += fmt::format("cache         none: {}\n", cache["problem"].get<std::string>());
  } else {
    out += fmt::format("cache         {} (from {})\n", cache["dir"].get<std::string>(),
                       cache["source"].get<std::string>());
  }
  return out;
}

void setup_info(CLI::App& app, CommandContext& /*context*/) {
  auto* command = app.add_subcommand(
      "info", "Show the NVRTC, CUDA headers, driver, devices and cache folder this process would use, and why");
  auto as_json = std::make_shared<bool>(false);
  command->add_flag("--json", *as_json, "Print JSON instead of text");
  command->callback([as_json] {
    const nlohmann::json info = info_json();
    std::fputs((*as_json ? info.dump(2) + "\n" : info_text(info)).c_str(), stdout);
  });
}

const CommandRegistration kInfo{"info", setup_info};

}  // namespace
}  // namespace metrale::cli
