// host/stubbed_compile.cpp: the rounds of host/stubbed_compile.hpp, and the messages that name
// the functions a kernel was built without or needs.
#include "host/stubbed_compile.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "host/compile_log_locations.hpp"

namespace metrale::host {
namespace {

// The refusal of a kernel whose link missed the stubs `called`: the functions it needs.
std::string unavailable_needed_reason(const std::vector<StubbedFunction>& stubbed,
                                      const std::vector<std::size_t>& called) {
  std::vector<StubbedFunction> needed;
  for (const std::size_t index : called) {
    if (index < stubbed.size()) {
      needed.push_back(stubbed[index]);
    }
  }
  return fmt::format(
      "it needs {}, which the host backend cannot build; a GPU runs it (the registry's NVRTC build), and the "
      "file's other kernels still load here",
      stubbed_list(needed));
}

// Whether one of the stubs `called` is the requested kernel's own body, stubbed for a compiler
// error (its name's last part is the expression's, without template arguments or namespaces).
bool stubs_own_body(const std::vector<StubbedFunction>& stubbed, const std::vector<std::size_t>& called,
                    std::string_view name_expression) {
  std::string_view kernel = name_expression.substr(0, name_expression.find('<'));
  if (const std::size_t colons = kernel.rfind("::"); colons != std::string_view::npos) {
    kernel.remove_prefix(colons + 2);
  }
  while (!kernel.empty() && kernel.back() == ' ') {
    kernel.remove_suffix(1);
  }
  return std::any_of(called.begin(), called.end(), [&](std::size_t index) {
    if (index >= stubbed.size() || !stubbed[index].from_compiler) {
      return false;
    }
    const std::string& name = stubbed[index].name;
    const std::size_t colons = name.rfind("::");
    return std::string_view(name).substr(colons == std::string::npos ? 0 : colons + 2) == kernel;
  });
}

}  // namespace

std::string stubbed_list(const std::vector<StubbedFunction>& stubbed) {
  std::string out;
  for (const StubbedFunction& function : stubbed) {
    out += fmt::format("{}{} at {} ({})", out.empty() ? "" : ", ", function.name, function.where, function.reason);
  }
  return out;
}

StubbedCompile compile_with_stubs(std::string_view preprocessed, const SourceNameFn& source_name,
                                  std::string_view path_prefix, std::string_view kernel_expression,
                                  const CompileUnitFn& compile) {
  StubbedCompile out;
  std::vector<FailedLine> failed;
  std::size_t stubbed_before = 0;
  std::optional<CompilerRun> first_failure;
  for (int round = 0;; ++round) {
    CudaSourceRewrite rewritten = rewrite_cuda_source(preprocessed, source_name, failed);
    if (!rewritten.refusal.empty()) {
      out.outcome = StubbedCompile::Outcome::kRefused;
      out.refusal = std::move(rewritten.refusal);
      return out;
    }
    // Nothing more to stub (the failure is the kernel's own, or no function's), or enough tries.
    if (out.failure && (rewritten.stubbed.size() == stubbed_before || round > kStubRounds)) {
      out.outcome = StubbedCompile::Outcome::kCompilerFailed;
      return out;
    }
    stubbed_before = rewritten.stubbed.size();
    std::optional<CompilerRun> ran = compile(rewritten.text);
    if (!ran) {
      out.outcome = StubbedCompile::Outcome::kNotCompiled;
      return out;
    }
    if (ran->exit_code == 0) {
      out.outcome = StubbedCompile::Outcome::kBuilt;
      out.failure.reset();
      out.stubbed = std::move(rewritten.stubbed);
      return out;
    }
    if (ran->timed_out) {
      out.outcome = StubbedCompile::Outcome::kCompilerFailed;
      out.failure = std::move(ran);
      return out;
    }
    if (const std::vector<std::size_t> called = unavailable_stubs_called(ran->output); !called.empty()) {
      // The kernel's own body failed to compile: the compiler's whole log says it best.
      if (first_failure && stubs_own_body(rewritten.stubbed, called, kernel_expression)) {
        out.outcome = StubbedCompile::Outcome::kCompilerFailed;
        out.failure = std::move(first_failure);
        return out;
      }
      out.outcome = StubbedCompile::Outcome::kRefused;
      out.refusal = unavailable_needed_reason(rewritten.stubbed, called);
      return out;
    }
    for (FailedLine& line : failed_engine_lines(ran->output, source_name, path_prefix)) {
      failed.push_back(std::move(line));
    }
    if (!first_failure) {
      first_failure = ran;
    }
    out.failure = std::move(ran);
  }
}

}  // namespace metrale::host
