// nvrtc_pch.cpp: the PCH plan, the heap lock and resize, and the log clean-up of nvrtc_pch.hpp.
#include "jit/nvrtc_pch.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <mutex>

#include "ground/log.hpp"
#include "jit/nvrtc_pch_folder.hpp"

namespace metrale {
namespace {

std::shared_mutex& heap_mutex() {
  static std::shared_mutex mutex;
  return mutex;
}

// NVRTC's messages (with --pch-messages, its default): one line each, the file name quoted.
constexpr std::string_view kCreating = "\": creating precompiled header file \"";
constexpr std::string_view kUsing = "\": using precompiled header file \"";

bool is_pch_message(std::string_view line, std::string_view marker) {
  return line.starts_with('"') && line.find(marker) != std::string_view::npos;
}

std::string lowered(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// The heap is grown to what NVRTC asked for rounded up to 64 MiB, so a slightly larger prefix
// later does not cost another resize (each resize invalidates every PCH made so far).
constexpr std::size_t kHeapGrain = std::size_t{64} << 20;

void grow_heap(const NvrtcApi& api, std::size_t required) {
  static std::atomic<bool> failure_logged{false};
  std::unique_lock lock(heap_mutex());
  std::size_t current = 0;
  if (api.get_pch_heap_size(&current) == NVRTC_SUCCESS && current >= required) {
    return;  // another compile grew it meanwhile
  }
  const std::size_t size = (required + kHeapGrain - 1) / kHeapGrain * kHeapGrain;
  const nvrtcResult status = api.set_pch_heap_size(size);
  if (status == NVRTC_SUCCESS) {
    logger().info(
        "NVRTC's PCH heap grown from {} MiB to {} MiB (a PCH needed {} MiB); the next compile of that "
        "source creates it",
        current >> 20, size >> 20, required >> 20);
  } else if (!failure_logged.exchange(true)) {
    logger().warn("nvrtcSetPCHHeapSize({}) failed ({}); compiles go on without a PCH that large", size,
                  api.get_error_string(status));
  }
}

}  // namespace

std::string_view pch_use_name(PchUse use) {
  switch (use) {
    case PchUse::kCreated:
      return "created";
    case PchUse::kUsed:
      return "used";
    case PchUse::kNone:
      break;
  }
  return "none";
}

bool pch_enabled(const EnvLookup& env) {
  const std::optional<std::string> value = env(kPchVariable);
  if (!value || value->empty()) {
    return true;
  }
  const std::string word = lowered(*value);
  if (word == "off" || word == "0" || word == "false" || word == "no") {
    return false;
  }
  if (word != "on" && word != "1" && word != "true" && word != "yes") {
    static std::atomic<bool> logged{false};
    if (!logged.exchange(true)) {
      logger().warn("METRALE_PCH='{}' is neither on nor off (on, 1, true, yes; off, 0, false, no): PCH stays on",
                    *value);
    }
  }
  return true;
}

PchPlan plan_pch(const NvrtcLibrary& library, PchChoice choice, bool uses_toolkit, const EnvLookup& env) {
  if (choice == PchChoice::kOff || (choice == PchChoice::kAuto && !uses_toolkit) || !library.available() ||
      !pch_enabled(env)) {
    return {};
  }
  if (!library.api->pch_available()) {
    static std::once_flag logged;
    std::call_once(logged, [&] {
      logger().info("NVRTC {} ({}) has no precompiled headers (CUDA 12.8+): every compile parses its headers",
                    library.version, library.path);
    });
    return {};
  }
  const std::optional<std::filesystem::path> folder = pch_folder(env);
  if (!folder) {
    return {};
  }
  // --pch-messages stays on (its default): its lines say whether a PCH was used.
  return PchPlan{{"-pch", "--pch-dir=" + folder->string(), "--pch-verbose=false"}};
}

std::shared_lock<std::shared_mutex> pch_compile_lock() { return std::shared_lock(heap_mutex()); }

PchOutcome strip_pch_messages(std::string_view log) {
  PchOutcome out;
  std::size_t start = 0;
  while (start < log.size()) {
    const std::size_t end = log.find('\n', start);
    const std::size_t stop = end == std::string_view::npos ? log.size() : end + 1;
    const std::string_view line = log.substr(start, stop - start);
    if (is_pch_message(line, kUsing)) {
      out.use = PchUse::kUsed;
    } else if (is_pch_message(line, kCreating)) {
      if (out.use == PchUse::kNone) {
        out.use = PchUse::kCreated;
      }
    } else {
      out.log += line;
    }
    start = stop;
  }
  return out;
}

PchOutcome finish_pch(const NvrtcLibrary& library, nvrtcProgram program, std::string_view log) {
  PchOutcome out = strip_pch_messages(log);
  const NvrtcApi& api = *library.api;
  const nvrtcResult status = api.get_pch_create_status(program);
  if (status == NVRTC_SUCCESS) {
    out.use = PchUse::kCreated;
  } else if (status == NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED) {
    std::size_t required = 0;
    if (api.get_pch_heap_size_required(program, &required) == NVRTC_SUCCESS && required > 0) {
      grow_heap(api, required);
    }
    if (out.use == PchUse::kCreated) {
      out.use = PchUse::kNone;  // announced, but not made
    }
  }
  return out;
}

}  // namespace metrale
