// tools/bench/jitify2_startup.cpp: metrale-jitify2-startup, the issue-13 comparison point. NVIDIA
// Jitify2 compiles the hopper kernel set from the same templates, in its best use: one program
// per template file (its other templates as header sources), all programs in parallel, each
// preprocessed (Jitify2's header discovery) then compiled to a CUBIN for sm_90 with the options
// metrale-jit uses. tools/bench/startup_times.sh times the whole process beside metrale-jit's.
// Jitify2 is not a dependency: this is built only when -DMETRALE_JITIFY2_HEADER=/path/jitify2.hpp
// is given (tools/cmake/bench_jitify2.cmake), and nothing of Jitify2 is in this repository.
// Usage: metrale-jitify2-startup TEMPLATE_DIR. Exit 0 when every kernel compiled.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <jitify2.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

// The hopper target's kernel set, by template file (what `metrale-jit build --target hopper`
// compiles; name expressions as its bundle manifest lists them).
struct ProgramJob {
  std::string file;
  std::vector<std::string> name_expressions;
};

const std::vector<ProgramJob>& hopper_jobs() {
  static const std::vector<ProgramJob> jobs{
      {"fp8_act_quant.cuh",
       {"metrale::kernels::per_token_group_quant_fp8<16, 1>",
        "metrale::kernels::per_token_group_quant_fp8_hopper<4, 8>"}},
      {"ssm_ba_gates.cuh",
       {"metrale::kernels::dense_gemm_ba_gates_prefill<256, 64>",
        "metrale::kernels::dense_gemm_ba_gates_prefill_hopper<256, 64, 8>"}},
      {"ssm_ba_gates_mma.cuh", {"metrale::kernels::ssm_ba_gates_mma<256, 64, 8>"}},
  };
  return jobs;
}

jitify2::StringMap read_templates(const std::filesystem::path& dir) {
  jitify2::StringMap out;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".cuh") {
      std::ifstream in(entry.path(), std::ios::binary);
      std::ostringstream text;
      text << in.rdbuf();
      out[entry.path().filename().string()] = text.str();
    }
  }
  return out;
}

// One program: preprocess, then compile every name expression of the file. Empty on success.
std::string compile_one(const ProgramJob& job, const jitify2::StringMap& templates) {
  jitify2::StringMap headers = templates;
  const auto main = headers.find(job.file);
  if (main == headers.end()) {
    return job.file + ": not in the template directory";
  }
  const std::string source = main->second;
  headers.erase(main);
  const jitify2::PreprocessedProgram preprocessed =
      jitify2::Program(job.file, source, headers)
          ->preprocess({"-std=c++17", "--fmad=false", "-default-device", "-arch=sm_90"});
  if (!preprocessed) {
    return job.file + ": preprocess: " + preprocessed.error();
  }
  // preprocess() takes the arch flags out (it may preprocess for several); compile() names one.
  const jitify2::CompiledProgram compiled = preprocessed->compile(job.name_expressions, {}, {"-arch=sm_90"});
  if (!compiled) {
    return job.file + ": compile: " + compiled.error();
  }
  if (compiled->cubin().empty()) {
    return job.file + ": no CUBIN";
  }
  std::fprintf(stderr, "%s: %zu kernels, CUBIN %zu bytes\n", job.file.c_str(), job.name_expressions.size(),
               compiled->cubin().size());
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: metrale-jitify2-startup TEMPLATE_DIR\n");
    return 2;
  }
  const jitify2::StringMap templates = read_templates(argv[1]);
  const std::vector<ProgramJob>& jobs = hopper_jobs();
  std::vector<std::string> errors(jobs.size());
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    threads.emplace_back([&, i] { errors[i] = compile_one(jobs[i], templates); });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  int failed = 0;
  for (const std::string& error : errors) {
    if (!error.empty()) {
      std::fprintf(stderr, "%s\n", error.c_str());
      ++failed;
    }
  }
  return failed == 0 ? 0 : 1;
}
