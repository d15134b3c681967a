// tools/bench/host_bench_corpus.cpp: metrale-host-bench --corpus: the corpus of kernels written as
// people write them (tests/data/corpus, the table in corpus_cases.hpp) on the host backend, each
// loaded through a KernelRegistry (the host JIT, as an engine's kernels) and run at its bench size,
// checked against its reference; prints elements per second per kernel, one markdown row each
// (the rows of BENCHMARKS.md's corpus table). A regression in the prelude (barriers, shuffles,
// atomics, the extern __shared__ refresh) shows as a slower row. Exits 1 when a case mismatches.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "data/corpus/corpus_cases.hpp"
#include "host/host_backend.hpp"

int corpus_bench(int argc, char** argv) {
  unsigned workers = 2;
  int repeats = 3;
  double scale = 1.0;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--workers" && i + 1 < argc) {
      workers = static_cast<unsigned>(std::atoi(argv[++i]));
    } else if (arg == "--repeats" && i + 1 < argc) {
      repeats = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--scale" && i + 1 < argc) {
      scale = std::atof(argv[++i]);
    } else if (arg == "--case" && i + 1 < argc) {
      only = argv[++i];
    }
  }
  metrale::HostBackendOptions options;
  options.worker_threads = workers;
  metrale::HostBackend gpu(options);
  const std::vector<corpus::CorpusCase>& cases = corpus::corpus_cases();
  corpus::CorpusRegistry registry(cases,
                                  corpus::corpus_sources(std::string(METRALE_SOURCE_DIR) + "/tests/data/corpus"));
  registry.load(gpu);
  std::printf("metrale-host-bench --corpus: %s, median of %d runs, each checked against its reference\n\n",
              gpu.describe().c_str(), repeats);
  std::printf("| kernel | source | elements | element | median s | elements/s |\n");
  std::printf("| --- | --- | --- | --- | --- | --- |\n");
  int failures = 0;
  for (const corpus::CorpusCase& c : cases) {
    if (!only.empty() && c.name != only) {
      continue;
    }
    const auto elements = static_cast<std::size_t>(static_cast<double>(c.bench_elements) * scale);
    std::vector<double> seconds;
    std::size_t processed = 0;
    std::string mismatch;
    for (int r = 0; r < repeats && mismatch.empty(); ++r) {
      corpus::CaseRun run(gpu, registry.handles());
      const corpus::CaseResult result = c.run(run, std::max<std::size_t>(1, elements), 7U + static_cast<unsigned>(r));
      processed = result.elements;
      mismatch = result.mismatch;
      seconds.push_back(run.seconds());
    }
    std::sort(seconds.begin(), seconds.end());
    const double median = seconds[seconds.size() / 2];
    if (!mismatch.empty()) {
      ++failures;
      std::fprintf(stderr, "%s: %s\n", c.name.c_str(), mismatch.c_str());
    }
    std::printf("| `%s` | %s | %zu | %s | %.4f | %.3g%s |\n", c.kernels.front().expression.c_str(),
                c.kernels.front().source.c_str(), processed, c.element.c_str(), median,
                static_cast<double>(processed) / median, mismatch.empty() ? "" : " (MISMATCH)");
  }
  return failures == 0 ? 0 : 1;
}
