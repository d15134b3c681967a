// tools/bench/nvrtc_by_hand.cpp: metrale-nvrtc-by-hand, the cold-start anchor of
// tools/bench/startup_times.sh. It drives NVRTC the way an engine that calls it by hand would:
// one program per template file (the other templates as its header sources), every program on
// its own thread, the registry's options, a CUBIN out, no cache. What it compiles is read from
// `metrale-jit targets --json` (each kernel's template file and name expression, the target's
// NVRTC options), so it compiles exactly the set `metrale-jit build --target NAME` compiles and
// cannot drift from it. It links libnvrtc directly and uses nothing of the library's JIT.
// Usage: metrale-nvrtc-by-hand TARGETS_JSON TEMPLATE_DIR [TARGET (default hopper)].
// Exit 0 when every program compiled to a CUBIN holding every name expression; 1 otherwise.
#include <nvrtc.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Program {
  std::string file;
  std::vector<std::string> expressions;
  std::string error;  // empty on success
  std::size_t cubin_bytes = 0;
  double ms = 0.0;
};

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The target's kernels grouped by template file, in order of first appearance, and its options.
bool plan(const nlohmann::json& targets, const std::string& name, std::vector<Program>& programs,
          std::vector<std::string>& options) {
  for (const nlohmann::json& target : targets) {
    if (target.at("name") != name) {
      continue;
    }
    if (target.at("nvrtc_options").is_null()) {
      std::fprintf(stderr, "target %s names no arch: nothing to compile by hand\n", name.c_str());
      return false;
    }
    options = target.at("nvrtc_options").get<std::vector<std::string>>();
    for (const nlohmann::json& kernel : target.at("kernels")) {
      const std::string file = kernel.at("source");
      auto program = programs.begin();
      while (program != programs.end() && program->file != file) {
        ++program;
      }
      if (program == programs.end()) {
        program = programs.insert(programs.end(), Program{file, {}, {}, 0, 0.0});
      }
      program->expressions.push_back(kernel.at("expression"));
    }
    return true;
  }
  std::fprintf(stderr, "no target %s in the targets JSON\n", name.c_str());
  return false;
}

std::string nvrtc_error(const char* what, nvrtcResult result) {
  return std::string(what) + ": " + nvrtcGetErrorString(result);
}

// One program: every name expression of the file, compiled to a CUBIN. Fills error on failure.
void compile(Program& job, const std::map<std::string, std::string>& templates,
             const std::vector<std::string>& options) {
  const auto start = std::chrono::steady_clock::now();
  const auto main = templates.find(job.file);
  if (main == templates.end()) {
    job.error = job.file + ": not in the template directory";
    return;
  }
  std::vector<const char*> header_texts, header_names;
  for (const auto& [file, text] : templates) {
    if (file != job.file) {
      header_names.push_back(file.c_str());
      header_texts.push_back(text.c_str());
    }
  }
  nvrtcProgram program = nullptr;
  nvrtcResult result =
      nvrtcCreateProgram(&program, main->second.c_str(), job.file.c_str(), static_cast<int>(header_texts.size()),
                         header_texts.data(), header_names.data());
  if (result != NVRTC_SUCCESS) {
    job.error = nvrtc_error("nvrtcCreateProgram", result);
    return;
  }
  for (const std::string& expression : job.expressions) {
    nvrtcAddNameExpression(program, expression.c_str());
  }
  std::vector<const char*> option_pointers;
  for (const std::string& option : options) {
    option_pointers.push_back(option.c_str());
  }
  result = nvrtcCompileProgram(program, static_cast<int>(option_pointers.size()), option_pointers.data());
  if (result != NVRTC_SUCCESS) {
    std::size_t log_size = 0;
    nvrtcGetProgramLogSize(program, &log_size);
    std::string log(log_size, '\0');
    nvrtcGetProgramLog(program, log.data());
    job.error = job.file + ": " + nvrtc_error("compile", result) + "\n" + log;
  } else {
    for (const std::string& expression : job.expressions) {
      const char* lowered = nullptr;
      if (nvrtcGetLoweredName(program, expression.c_str(), &lowered) != NVRTC_SUCCESS || lowered == nullptr) {
        job.error = job.file + ": no lowered name for " + expression;
      }
    }
    nvrtcGetCUBINSize(program, &job.cubin_bytes);
    std::string cubin(job.cubin_bytes, '\0');
    if (job.cubin_bytes == 0 || nvrtcGetCUBIN(program, cubin.data()) != NVRTC_SUCCESS) {
      job.error = job.file + ": no CUBIN";
    }
  }
  nvrtcDestroyProgram(&program);
  job.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4) {
    std::fprintf(stderr, "usage: metrale-nvrtc-by-hand TARGETS_JSON TEMPLATE_DIR [TARGET]\n");
    return 2;
  }
  std::vector<Program> programs;
  std::vector<std::string> options;
  try {
    const nlohmann::json targets = nlohmann::json::parse(read_text(argv[1]));
    if (!plan(targets, argc == 4 ? argv[3] : "hopper", programs, options)) {
      return 2;
    }
  } catch (const nlohmann::json::exception& error) {
    std::fprintf(stderr, "%s: not the JSON of `metrale-jit targets --json`: %s\n", argv[1], error.what());
    return 2;
  }
  std::map<std::string, std::string> templates;
  for (const auto& entry : std::filesystem::directory_iterator(argv[2])) {
    if (entry.path().extension() == ".cuh") {
      templates[entry.path().filename().string()] = read_text(entry.path());
    }
  }
  std::vector<std::thread> threads;
  threads.reserve(programs.size());
  for (Program& program : programs) {
    threads.emplace_back([&program, &templates, &options] { compile(program, templates, options); });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  int failed = 0;
  for (const Program& program : programs) {
    if (!program.error.empty()) {
      std::fprintf(stderr, "%s\n", program.error.c_str());
      ++failed;
    } else {
      std::fprintf(stderr, "%s: %zu kernels, CUBIN %zu bytes, %.1f ms\n", program.file.c_str(),
                   program.expressions.size(), program.cubin_bytes, program.ms);
    }
  }
  return failed == 0 ? 0 : 1;
}
