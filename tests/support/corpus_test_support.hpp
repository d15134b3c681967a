// tests/support/corpus_test_support.hpp: running a table of corpus cases (tests/data/corpus/
// corpus_cases.hpp) as tests: one Catch2 test per case, registered from the table when the test
// binary starts (so a new row is a new CTest entry, run in parallel with the others), each loading
// its kernels on a host backend through a KernelRegistry (the host JIT, as an engine's kernels
// load) and comparing the run with its reference; and the NVRTC build of a whole table.
// Invariants: the host JIT's objects go to one cache folder per build tree, so a second run of a
// case loads them instead of compiling; a case whose kernel is absent fails quoting the reason.
#pragma once

#include <catch2/catch.hpp>
#include <deque>
#include <filesystem>
#include <string>
#include <vector>

#include "data/corpus/corpus_cases.hpp"
#include "host/host_backend.hpp"

namespace corpus::test {

inline std::filesystem::path corpus_dir() { return std::filesystem::path(METRALE_SOURCE_DIR) / "tests/data/corpus"; }

inline metrale::HostBackendOptions host_options() {
  metrale::HostBackendOptions options;
  options.worker_threads = 2;
  options.jit_cache_dir = std::filesystem::path(METRALE_BINARY_DIR) / "corpus-host-jit";
  return options;
}

// Runs `c` at its test size on a fresh host backend; a Catch2 failure names what differed.
inline void run_case_on_host(const CorpusCase& c, const Sources& sources, std::uint32_t seed = 2024) {
  metrale::HostBackend gpu(host_options());
  CorpusRegistry registry({c}, sources);
  registry.load(gpu);
  CaseRun run(gpu, registry.handles());
  const CaseResult result = c.run(run, c.test_elements, seed);
  INFO(c.name << " (" << c.kernels.front().source << ": " << c.kernels.front().expression << ") over "
              << result.elements << " elements");
  CHECK(result.mismatch == "");
}

// One test per case of `cases` (which must outlive the tests), named "<prefix><case name>".
class CaseInvoker : public Catch::ITestInvoker {
 public:
  CaseInvoker(const std::vector<CorpusCase>* cases, std::size_t index) : cases_(cases), index_(index) {}
  void invoke() const override { run_case_on_host((*cases_)[index_], corpus_sources(corpus_dir())); }

 private:
  const std::vector<CorpusCase>* cases_;
  std::size_t index_;
};

// Registers the tests; call from a namespace-scope initializer. `tags` for every case ("[corpus]"),
// `atomic_tags` added to the cases marked atomics ("[concurrency]").
inline bool register_host_cases(const std::vector<CorpusCase>& cases, const std::string& prefix,
                                const std::string& tags, const std::string& atomic_tags) {
  static std::deque<std::string> names;  // Catch keeps StringRefs to these
  static std::deque<Catch::AutoReg> registered;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    names.push_back(prefix + cases[i].name);
    const std::string& name = names.back();
    names.push_back(tags + (cases[i].atomics ? atomic_tags : ""));
    const std::string& case_tags = names.back();
    registered.emplace_back(new CaseInvoker(&cases, i),
                            Catch::SourceLineInfo(__FILE__, static_cast<std::size_t>(__LINE__)), Catch::StringRef(),
                            Catch::NameAndTags{name.c_str(), case_tags.c_str()});
  }
  return true;
}

// Builds every kernel of `cases` with NVRTC for each arch; a failure quotes the compiler's log.
inline void compile_cases_with_nvrtc(const std::vector<CorpusCase>& cases, const std::vector<std::string>& archs) {
  CorpusRegistry registry(cases, corpus_sources(corpus_dir()));
  for (const std::string& arch : archs) {
    for (const metrale::BuildRecord& record : registry.build(arch)) {
      INFO(record.kernel << " for " << arch << ": " << (record.entry ? record.entry->log : record.load_error));
      CHECK(record.ok());
    }
  }
}

}  // namespace corpus::test
