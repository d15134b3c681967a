// nvrtc_compiler.cpp: the NVRTC calls behind compile_with_nvrtc, through the library loaded
// on first use (nvrtc_library.hpp). Every NVRTC object is owned by a guard so an early return
// never leaks a program; without NVRTC a compile is a failure whose log says so.
#include "jit/nvrtc_compiler.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <memory>
#include <shared_mutex>

#include "ground/log.hpp"
#include "jit/cache_location.hpp"
#include "jit/compile_deadline.hpp"
#include "jit/compile_target.hpp"
#include "jit/include_markers.hpp"
#include "jit/nvrtc_c_headers.hpp"
#include "jit/nvrtc_library.hpp"

namespace metrale {
namespace {

struct ProgramDeleter {
  const NvrtcApi* api;
  void operator()(_nvrtcProgram* program) const { api->destroy_program(&program); }
};
using ProgramPtr = std::unique_ptr<_nvrtcProgram, ProgramDeleter>;

// What a compile reads through CompileRequest::env, from the lists of the code that reads them:
// METRALE_PCH (nvrtc_pch.hpp) and the PCH folder's cache root (cache_location.hpp). The temporary
// folder the PCH falls back to comes from the process's environment (temp_directory_path).
constexpr std::array<const char*, 1 + kCacheDirVariables.size()> kNvrtcCompileVariables = [] {
  std::array<const char*, 1 + kCacheDirVariables.size()> all{kPchVariable};
  std::copy(kCacheDirVariables.begin(), kCacheDirVariables.end(), all.begin() + 1);
  return all;
}();

CompileResult failure(CompileResult result, std::string message) {
  result.ok = false;
  result.log = std::move(message) + (result.log.empty() ? "" : "\n" + result.log);
  return result;
}

std::string program_log(const NvrtcApi& api, nvrtcProgram program) {
  std::size_t size = 0;
  if (api.get_program_log_size(program, &size) != NVRTC_SUCCESS || size <= 1) {
    return {};
  }
  std::string log(size, '\0');
  api.get_program_log(program, log.data());
  log.resize(size - 1);  // the terminating NUL
  return log;
}

}  // namespace

std::span<const char* const> nvrtc_compile_variables() { return kNvrtcCompileVariables; }

const KernelResources* CompileResult::resources_for(std::string_view lowered_name) const {
  for (const KernelResources& entry : resources) {
    if (entry.entry == lowered_name) {
      return &entry;
    }
  }
  return nullptr;
}

std::vector<std::string> nvrtc_options(std::string_view arch, std::span<const std::string> include_dirs,
                                       const std::vector<std::string>& extra_options) {
  std::vector<std::string> options{"-std=c++17", "--fmad=false", "-default-device",
                                   "--gpu-architecture=" + std::string(arch)};
  for (const std::string& dir : include_dirs) {
    options.push_back("-I" + dir);
  }
  // ptxas only runs for a real SM; the resource report comes from its -v output.
  if (arch.starts_with("sm_")) {
    options.emplace_back("--ptxas-options=-v");
  }
  options.insert(options.end(), extra_options.begin(), extra_options.end());
  return options;
}

CompileResult compile_with_nvrtc(const CompileRequest& request) {
  CompileResult result;
  const auto start = std::chrono::steady_clock::now();
  result.lowered_names.assign(request.name_expressions.size(), std::string());
  const std::string* main_text = request.sources == nullptr ? nullptr : request.sources->find(request.source_name);
  if (main_text == nullptr) {
    return failure(std::move(result), "source '" + request.source_name + "' is not in the source set");
  }
  const NvrtcLibrary& library = nvrtc_library();
  if (!library.available()) {
    return failure(std::move(result), library.reason);
  }
  const NvrtcApi& api = *library.api;
  const std::vector<std::string> include_dirs = include_dirs_for(*request.sources, request.source_name);
  result.options = nvrtc_options(request.arch, include_dirs, request.extra_options);
  const PchPlan pch = plan_pch(library, request.pch, !include_dirs.empty(), request.env);

  // Every other source is a header, so templates can #include each other by name. Each text
  // carries its include marker (its index; the main source's is the header count), so the log
  // says which ones the preprocessor opened.
  const bool markers = include_markers_usable(result.options);
  std::vector<std::string> marked;
  std::vector<const char*> header_texts;
  std::vector<const char*> header_names;
  for (const auto& [name, text] : request.sources->sources()) {
    if (name != request.source_name) {
      header_names.push_back(name.c_str());
      marked.push_back(markers ? with_include_marker(header_names.size() - 1, text) : text);
    }
  }
  const std::size_t set_headers = header_names.size();  // the main source's marker index
  // A #line among the main file's leading directives stops NVRTC creating a PCH: its marker goes last.
  const std::string main_marked = !markers       ? *main_text
                                  : pch.active() ? with_trailing_include_marker(header_names.size(), *main_text)
                                                 : with_include_marker(header_names.size(), *main_text);
  for (const std::string& text : marked) {
    header_texts.push_back(text.c_str());
  }
  // The C headers NVRTC lacks, after the set's (unmarked: they are keyed apart, c_headers_key_part).
  const std::vector<const NvrtcCHeader*> c_headers = nvrtc_c_headers_for(*request.sources, request.source_name);
  std::vector<std::string> c_header_strings;
  for (const NvrtcCHeader* header : c_headers) {
    c_header_strings.emplace_back(header->name);
    c_header_strings.emplace_back(header->text);
  }
  for (std::size_t i = 0; i < c_header_strings.size(); i += 2) {
    header_names.push_back(c_header_strings[i].c_str());
    header_texts.push_back(c_header_strings[i + 1].c_str());
  }
  nvrtcProgram raw = nullptr;
  nvrtcResult status =
      api.create_program(&raw, main_marked.c_str(), request.source_name.c_str(), static_cast<int>(header_texts.size()),
                         header_texts.data(), header_names.data());
  if (status != NVRTC_SUCCESS) {
    return failure(std::move(result), std::string("nvrtcCreateProgram: ") + api.get_error_string(status));
  }
  ProgramPtr program(raw, ProgramDeleter{&api});
  for (const std::string& expression : request.name_expressions) {
    status = api.add_name_expression(raw, expression.c_str());
    if (status != NVRTC_SUCCESS) {
      return failure(std::move(result),
                     "nvrtcAddNameExpression('" + expression + "'): " + api.get_error_string(status));
    }
  }
  std::vector<const char*> option_pointers;
  for (const std::string& option : result.options) {
    option_pointers.push_back(option.c_str());
  }
  if (markers) {
    option_pointers.push_back(kIncludeMarkerOption.data());
  }
  for (const std::string& option : pch.options) {
    option_pointers.push_back(option.c_str());
  }
  std::string log_text;
  if (pch.active()) {
    {
      const std::shared_lock heap = pch_compile_lock();
      status = api.compile_program(raw, static_cast<int>(option_pointers.size()), option_pointers.data());
    }
    PchOutcome outcome = finish_pch(library, raw, program_log(api, raw));
    result.pch = outcome.use;
    log_text = std::move(outcome.log);
  } else {
    status = api.compile_program(raw, static_cast<int>(option_pointers.size()), option_pointers.data());
    log_text = program_log(api, raw);
  }
  MarkedLog marked_log = read_include_markers(log_text);
  const std::string& raw_log = marked_log.log;
  // The main source's own marker proves the markers were read; without it nothing is known.
  if (markers && marked_log.opened.contains(set_headers)) {
    std::vector<std::string> opened;
    for (const std::size_t index : marked_log.opened) {
      if (index < set_headers) {
        opened.emplace_back(header_names[index]);
      }
    }
    result.included = std::move(opened);
  }
  result.diagnostics = parse_diagnostics(raw_log, *request.sources);
  result.log = annotated_log(raw_log, result.diagnostics);
  result.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (status != NVRTC_SUCCESS && result.pch == PchUse::kUsed) {
    // A PCH must never be why a compile fails: the same compile once more without it.
    logger().debug("{} failed to compile with a precompiled header; compiling it again without", request.source_name);
    CompileRequest again = request;
    again.pch = PchChoice::kOff;
    return compile_with_nvrtc(again);
  }
  if (status != NVRTC_SUCCESS) {
    return failure(std::move(result), std::string("nvrtcCompileProgram: ") + api.get_error_string(status));
  }
  result.resources = parse_ptxas_resources(raw_log);
  for (std::size_t i = 0; i < request.name_expressions.size(); ++i) {
    const char* lowered = nullptr;
    status = api.get_lowered_name(raw, request.name_expressions[i].c_str(), &lowered);
    if (status != NVRTC_SUCCESS || lowered == nullptr) {
      return failure(std::move(result),
                     "nvrtcGetLoweredName('" + request.name_expressions[i] + "'): " + api.get_error_string(status));
    }
    result.lowered_names[i] = lowered;
  }
  std::size_t size = 0;
  if (api.get_ptx_size(raw, &size) == NVRTC_SUCCESS && size > 1) {
    result.ptx.resize(size);
    api.get_ptx(raw, result.ptx.data());
    result.ptx.resize(size - 1);
  }
  if (request.arch.starts_with("sm_") && api.get_cubin_size(raw, &size) == NVRTC_SUCCESS && size > 0) {
    result.cubin.resize(size);
    api.get_cubin(raw, result.cubin.data());
  }
  result.ok = true;
  result.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  logger().debug("NVRTC compiled {} ({} name expression{}) for {} in {:.0f} ms, PCH {}", request.source_name,
                 request.name_expressions.size(), request.name_expressions.size() == 1 ? "" : "s", request.arch,
                 result.compile_ms, pch_use_name(result.pch));
  return result;
}

CompileResult compile_with_nvrtc(const CompileRequest& request, double limit_s) {
  if (request.sources == nullptr) {
    return compile_with_nvrtc(request);  // answered at once: nothing to wait for
  }
  const auto start = std::chrono::steady_clock::now();
  // Everything the worker reads is its own: the caller's source set and environment may be gone
  // before an abandoned compile ends.
  auto sources = std::make_shared<const SourceSet>(*request.sources);
  CompileRequest owned = request;
  owned.sources = nullptr;
  owned.env = snapshot_env(request.env, kNvrtcCompileVariables);
  std::optional<CompileResult> done = run_with_deadline<CompileResult>(
      [owned = std::move(owned), sources]() mutable {
        owned.sources = sources.get();
        return compile_with_nvrtc(owned);
      },
      limit_s);
  if (done) {
    return std::move(*done);
  }
  CompileResult result;
  result.timed_out = true;
  result.lowered_names.assign(request.name_expressions.size(), std::string());
  result.log = compile_exceeded_reason(limit_s);
  result.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  logger().debug("NVRTC compile of {} for {} abandoned: {}", request.source_name, request.arch, result.log);
  return result;
}

const std::string& nvrtc_version() {
  static const std::string version = [] {
    const NvrtcLibrary& library = nvrtc_library();
    return library.available() ? library.identity : std::string(kNoNvrtcVersion);
  }();
  return version;
}

bool nvrtc_available() { return nvrtc_library().available(); }

const std::string& nvrtc_unavailable_reason() { return nvrtc_library().reason; }

const std::vector<int>& nvrtc_supported_archs() {
  static const std::vector<int> archs = [] {
    int count = 0;
    std::vector<int> out;
    const NvrtcLibrary& library = nvrtc_library();
    if (library.available() && library.api->get_num_supported_archs(&count) == NVRTC_SUCCESS && count > 0) {
      out.resize(static_cast<std::size_t>(count));
      library.api->get_supported_archs(out.data());
    }
    return out;
  }();
  return archs;
}

}  // namespace metrale
