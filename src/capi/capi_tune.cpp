// capi_tune.cpp: metrale_runtime_tune: Runtime::tune over the C ABI's arrays, the table written
// to the caller's path whole or not at all (save_tuning_table).
// Invariants: every op named is checked before anything is timed (an unknown one is an argument
// error naming the known ops, as metrale_op_find's); a path whose folder does not exist fails
// before the timing, not after it; a failed write leaves no temporary file behind.
#include <fmt/format.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "capi_call.hpp"
#include "capi_runtime.hpp"
#include "metrale/error.hpp"

namespace metrale::capi {
namespace {

// `count` values from `values` (NULL only with a count of 0); empty for 0, which the request reads
// as its default.
std::vector<std::uint32_t> c_sizes(const std::uint32_t* values, std::size_t count, std::string_view what) {
  if (count == 0) {
    return {};
  }
  if (values == nullptr) {
    throw CapiError(METRALE_ERROR_ARGUMENT, fmt::format("{} is NULL but {}_count is {}", what, what, count));
  }
  return {values, values + count};
}

std::string_view trimmed(std::string_view text) {
  const auto space = [](char c) { return c == ' ' || c == '\t'; };
  while (!text.empty() && space(text.front())) {
    text.remove_prefix(1);
  }
  while (!text.empty() && space(text.back())) {
    text.remove_suffix(1);
  }
  return text;
}

// "fp8-quant, ba-gates" as the ops' names; NULL or "": none (every op with a tunable guard).
std::vector<std::string> op_names(const metrale_runtime* handle, const char* ops) {
  std::vector<std::string> names;
  if (ops == nullptr || *ops == '\0') {
    return names;
  }
  std::string_view list(ops);
  while (true) {
    const std::size_t comma = list.find(',');
    const std::string_view item = trimmed(list.substr(0, comma));
    if (item.empty()) {
      throw CapiError(METRALE_ERROR_ARGUMENT,
                      fmt::format("ops '{}': expected comma-separated op names or aliases, found an empty one", ops));
    }
    const std::string name(item);
    names.emplace_back(find_op(handle, name.c_str()).op->name);
    if (comma == std::string_view::npos) {
      return names;
    }
    list.remove_prefix(comma + 1);
  }
}

// The folder the table goes to exists (checked before the timing, which may take minutes).
void require_folder(const std::filesystem::path& target) {
  const std::filesystem::path folder = target.has_parent_path() ? target.parent_path() : ".";
  std::error_code error;
  if (!std::filesystem::is_directory(folder, error)) {
    throw ConfigError(fmt::format("out_path {}: cannot write it: its folder {} is not a directory", target.string(),
                                  folder.string()));
  }
}

}  // namespace
}  // namespace metrale::capi

extern "C" {

metrale_status metrale_runtime_tune(metrale_runtime* runtime, const char* ops, const uint32_t* m, size_t m_count,
                                    const uint32_t* n, size_t n_count, const uint32_t* k, size_t k_count,
                                    uint32_t repeats, const char* out_path) {
  using namespace metrale::capi;
  return capi_call("metrale_runtime_tune", [&] {
    const HeldRuntime held(runtime);
    metrale::Runtime& rt = runtime_of(runtime);
    const std::filesystem::path target(c_text(out_path, "out_path"));
    if (target.empty()) {
      throw CapiError(METRALE_ERROR_ARGUMENT, "out_path is empty: name the file to write the table to");
    }
    metrale::TuneRequest request;
    request.ops = op_names(runtime, ops);
    request.m = c_sizes(m, m_count, "m");
    if (n_count != 0) {
      request.n = c_sizes(n, n_count, "n");
    }
    if (k_count != 0) {
      request.k = c_sizes(k, k_count, "k");
    }
    if (repeats != 0) {
      request.repeats = repeats;
    }
    require_folder(target);
    metrale::save_tuning_table(rt.tune(request), target.string());
  });
}

}  // extern "C"
