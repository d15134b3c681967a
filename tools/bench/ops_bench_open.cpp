// ops_bench_open.cpp: the benchmark's shapes and how long Runtime::open takes from each cache
// level: cold (a fresh memory cache over an empty cache directory: NVRTC for every kernel),
// warm (a fresh memory cache over the now filled directory), hot (the filled memory cache).
// Invariants: the directories are private temp directories, removed afterwards, so the
// user's cache is neither read nor written; on the host backend nothing is compiled, so the
// three levels measure the same work and the note says so.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "jit/compiled_memory_cache.hpp"
#include "jit/disk_entry_store.hpp"
#include "metrale/runtime.hpp"
#include "ops_bench.hpp"
#include "support/temp_dir.hpp"

namespace metrale::bench {

BenchSettings device_settings() {
  BenchSettings settings;
  settings.ms = {1, 16, 64, 264, 1024, 8192};  // 64: the decode kernel's last M (one token tile)
  settings.fp8_ks = {5120, 6144, 17408};
  return settings;
}

BenchSettings host_settings() {
  BenchSettings settings;
  settings.host = true;
  settings.repeats = 3;
  settings.warmup = 1;
  settings.rotate_bytes = 0;  // two sets: the host has no L2 worth defeating at these sizes
  settings.ceiling_bytes = 16ull << 20;
  settings.ms = {1, 4, 16};
  settings.fp8_ks = {1024, 2048};
  settings.ba_k = 1024;
  return settings;
}

BenchSettings sanity_settings(bool host) {
  BenchSettings settings = host ? host_settings() : device_settings();
  settings.sanity = true;
  settings.rotate_bytes = 0;
  settings.ms = {3, 300};  // one below and one above the twins' floors at 132 SMs
  settings.fp8_ks = {host ? 1024u : 5120u};
  return settings;
}

namespace {

using metrale::test::TempDir;

RuntimeOptions open_options(bool host, const std::filesystem::path& dir, std::shared_ptr<CompiledMemoryCache> memory) {
  RuntimeOptions options;
  options.backend = host ? BackendChoice::kHost : BackendChoice::kCuda;
  options.registry.emplace();
  options.registry->store =
      std::make_shared<EntryStore>(disk_entry_store(std::make_shared<DiskCache>(DiskCache::open_at(dir))));
  options.registry->memory = std::move(memory);
  return options;
}

double open_ms(bool host, const std::filesystem::path& dir, std::shared_ptr<CompiledMemoryCache> memory) {
  const auto start = std::chrono::steady_clock::now();
  const auto runtime = Runtime::open(open_options(host, dir, std::move(memory)));
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!runtime->has_device()) {
    throw std::runtime_error("Runtime::open found no device: " + runtime->no_device_reason());
  }
  return ms;
}

}  // namespace

OpenTimes time_runtime_open(bool host, int repeats) {
  OpenTimes times;
  std::vector<double> cold, warm, hot;
  TempDir kept{"metrale-ops-bench"};  // filled by the last cold open, read by the warm ones
  for (int r = 0; r < repeats; ++r) {
    TempDir fresh{"metrale-ops-bench"};
    cold.push_back(open_ms(host, fresh.path(), std::make_shared<CompiledMemoryCache>()));
  }
  open_ms(host, kept.path(), std::make_shared<CompiledMemoryCache>());
  for (int r = 0; r < repeats; ++r) {
    warm.push_back(open_ms(host, kept.path(), std::make_shared<CompiledMemoryCache>()));
  }
  const auto memory = std::make_shared<CompiledMemoryCache>();
  open_ms(host, kept.path(), memory);
  for (int r = 0; r < repeats; ++r) {
    hot.push_back(open_ms(host, kept.path(), memory));
  }
  times.cold_ms = median(cold);
  times.warm_ms = median(warm);
  times.hot_ms = median(hot);
  times.note = host ? fmt::format(
                          "host backend: nothing is compiled or cached, so the three levels do the same work; "
                          "median of {}",
                          repeats)
                    : fmt::format("median of {}; cold = NVRTC for every shipped kernel", repeats);
  return times;
}

}  // namespace metrale::bench
